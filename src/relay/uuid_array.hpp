// The ids that relay_done and relay_failed settle, as a uuid[] parameter in PostgreSQL's binary
// format (array_recv's): the server copies 16 bytes an id instead of parsing an array literal of
// their text.
#pragma once

#include <string>
#include <vector>

namespace inbox_relay {

// The ids are relay_take's, as uuid_out writes them. Throws std::invalid_argument on one that is
// not 32 hex digits (hyphens skipped).
std::string binary_uuid_array(const std::vector<std::string>& ids);

}  // namespace inbox_relay
