// inbox.relay_on_coordinator(function): the relay's functions (relay_take, relay_done,
// relay_failed, relay_release, in PL/pgSQL) call it first. On a worker node of a Citus cluster
// that distributes the markers they would read the worker's own outbox, which no send fills
// (inbox.send is refused there): a relay pointed at a worker would report no lag and publish
// nothing while the coordinator's messages wait. So they fail at once, saying where to connect.
// The SQL edition, which no Citus cluster loads, has nothing to check.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"
}

#include "outbox/relay_on_coordinator.hpp"
#include "store/coordinator_tables.hpp"

void require_relay_on_coordinator(const char* function) {
    require_coordinator_table(function, "inbox.outbox_messages",
                              "Connect the relay to the coordinator, where the messages are sent.");
}

extern "C" {

PG_FUNCTION_INFO_V1(inbox_relay_on_coordinator);
PGDLLEXPORT Datum inbox_relay_on_coordinator(PG_FUNCTION_ARGS) {
    require_relay_on_coordinator(text_to_cstring(PG_GETARG_TEXT_PP(0)));
    PG_RETURN_VOID();
}
}
