// The event trigger inbox_guard_drop: DROP EXTENSION inbox (or DROP SCHEMA inbox CASCADE) would
// delete every marker, the only record of which messages were processed, with nothing to say
// so; after it every redelivery is processed again. So the drop is refused while markers exist,
// unless the session says it means it (inbox.allow_drop_with_markers), as TimescaleDB guards its
// hypertables. Fired at ddl_command_start, before anything is dropped.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "commands/event_trigger.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
}

#include <cstring>

#include "pg/spi.hpp"
#include "settings.hpp"

namespace {

bool names_inbox(List* names) {
    ListCell* cell;
    foreach (cell, names) {
        if (strcmp(strVal(lfirst(cell)), "inbox") == 0) return true;
    }
    return false;
}

// DROP EXTENSION inbox, or DROP SCHEMA inbox CASCADE (without CASCADE it fails anyway).
bool drops_inbox(Node* statement) {
    if (statement == nullptr || !IsA(statement, DropStmt)) return false;
    auto* drop = castNode(DropStmt, statement);
    if (drop->removeType == OBJECT_EXTENSION) return names_inbox(drop->objects);
    if (drop->removeType == OBJECT_SCHEMA && drop->behavior == DROP_CASCADE)
        return names_inbox(drop->objects);
    return false;
}

// How many consumers have markers now, 0 when there are none. One index descent per consumer
// of the registry: cheap whatever the size of the inbox.
int64 consumers_with_markers() {
    pg::spi_connect();
    int rc = SPI_execute(
        "SELECT pg_catalog.count(*) FROM inbox.consumer_registry r WHERE EXISTS "
        "(SELECT FROM inbox.markers m WHERE m.consumer_id OPERATOR(pg_catalog.=) r.id)",
        true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "counting the consumers with markers failed");
    bool isnull = true;
    Datum count = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    SPI_finish();
    return isnull ? 0 : DatumGetInt64(count);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_guard_drop);
PGDLLEXPORT Datum inbox_guard_drop(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("inbox.guard_drop() is an event trigger function")));
    auto* event = reinterpret_cast<EventTriggerData*>(fcinfo->context);
    if (allow_drop_with_markers || !drops_inbox(event->parsetree)) PG_RETURN_VOID();
    int64 consumers = consumers_with_markers();
    if (consumers == 0) PG_RETURN_VOID();
    ereport(
        ERROR,
        (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
         errmsg_plural("dropping extension inbox would delete the markers of %lld consumer",
                       "dropping extension inbox would delete the markers of %lld consumers",
                       static_cast<unsigned long>(consumers), static_cast<long long>(consumers)),
         errdetail("The markers record which messages were processed: without them, every "
                   "redelivery would be processed again."),
         errhint("Keep them first if they matter (pg_dump includes them). To drop them, "
                 "SET inbox.allow_drop_with_markers = on and drop again; after CREATE "
                 "EXTENSION, inbox.grant_access gives roles their privileges back.")));
}
}
