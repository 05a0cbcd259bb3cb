// The drop guard (docs/security.md, "Dropping and re-creating the extension"): dropping the
// extension deletes every marker, the only record of which messages were processed, so it is
// refused while markers exist unless the session sets inbox.allow_drop_with_markers. Two parts meet
// every way of dropping it:
//  - the event trigger inbox_guard_drop (drop_guard.cpp), at ddl_command_start of DROP EXTENSION
//    inbox and DROP SCHEMA inbox CASCADE: it counts the consumers with markers before anything
//    is dropped, on Citus too, where the markers live in shards that the next event trigger
//    drops;
//  - an object-access hook (drop_guard_hook.cpp), when the extension's own markers table is
//    deleted with the extension, whatever the statement (DROP OWNED BY its owner, DROP EXTENSION
//    plpgsql CASCADE, ...). It sees the rows of a local table only.
#pragma once

extern "C" {
#include "postgres.h"
}

// Raises 2BP01 for a drop that would delete markers: of `consumers` consumers, or, when that
// count is unknown (negative), of some.
[[noreturn]] void refuse_drop_with_markers(int64 consumers);

// From _PG_init, whenever the library is loaded.
void install_drop_guard_hook();
