// DROP EXTENSION inbox on a Citus coordinator: the event trigger inbox_drop_citus_shards drops the
// shards of the store's Citus tables before the extension goes. Citus drops an extension's
// distributed table as if it were a partition (its metadata only), which would leave every shard
// on the workers, and their schema refusing the next CREATE EXTENSION.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
}

#include <cstring>

#include "pg/spi.hpp"

namespace {

bool drops_inbox(Node* statement) {
    if (statement == nullptr || !IsA(statement, DropStmt)) return false;
    auto* drop = castNode(DropStmt, statement);
    if (drop->removeType != OBJECT_EXTENSION) return false;
    ListCell* cell = nullptr;
    foreach (cell, drop->objects)
        if (std::strcmp(strVal(lfirst(cell)), "inbox") == 0) return true;
    return false;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_drop_shards_first);
PGDLLEXPORT Datum inbox_drop_shards_first(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("inbox.drop_shards_first() is an event trigger")));
    auto* event = reinterpret_cast<EventTriggerData*>(fcinfo->context);
    if (!drops_inbox(event->parsetree)) PG_RETURN_VOID();
    pg::spi_connect();
    int rc = SPI_execute("SELECT inbox.leave_citus(false)", false, 0);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "inbox.leave_citus failed: %s", SPI_result_code_string(rc));
    SPI_finish();
    PG_RETURN_VOID();
}
}
