// The message headers as the take statement lists them: netstrings, name then value
// ("4:type,9:OrderPaid,"), so that any text, commas and colons included, comes through exactly.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inbox_relay {

// Throws std::invalid_argument on a list that is not netstrings in pairs.
std::vector<std::pair<std::string, std::string>> parse_header_list(std::string_view list);

}  // namespace inbox_relay
