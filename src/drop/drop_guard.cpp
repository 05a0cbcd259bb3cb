// The event trigger inbox_guard_drop (drop_guard.hpp): DROP EXTENSION inbox (or DROP SCHEMA
// inbox CASCADE) is refused while markers, undelivered outgoing messages or streams' positions
// exist, unless the session says it means it (inbox.allow_drop_with_markers), as TimescaleDB
// guards its hypertables.
// Fired at ddl_command_start, before anything is dropped. It fires for DROP OWNED too, where it has
// nothing to parse: calling it loads the library, so the hook of drop_guard_hook.cpp is in place
// before the statement drops anything, in a session without shared_preload_libraries as well.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/namespace.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"
}

#include "drop/drop_guard.hpp"
#include "drop/drop_statement.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

namespace {

// How many consumers have markers now, 0 when there are none. A bounded count per consumer of
// the registry (inbox.marker_counts()): cheap whatever the size of the inbox, and planned by
// Citus on distributed markers too, where a correlated subquery over them is not.
int64 consumers_with_markers() {
    pg::spi_connect();
    int rc = SPI_execute(
        "SELECT pg_catalog.count(*) FROM inbox.marker_counts() m "
        "WHERE m.retained OPERATOR(pg_catalog.>) 0",
        true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "counting the consumers with markers failed");
    bool isnull = true;
    Datum count = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    SPI_finish();
    return isnull ? 0 : DatumGetInt64(count);
}

// The count that `sql` reads from the extension's `table`, one of 1.3: 0 in a database not at
// 1.3 yet.
int64 count_in_table_of_1_3(const char* table, const char* sql) {
    Oid schema = get_namespace_oid("inbox", true);
    if (!OidIsValid(schema) || !OidIsValid(get_relname_relid(table, schema))) return 0;
    pg::spi_connect();
    int rc = SPI_execute(sql, true, 1);
    if (rc != SPI_OK_SELECT) elog(ERROR, "counting the rows of inbox.%s failed", table);
    bool isnull = true;
    Datum count = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    SPI_finish();
    return isnull ? 0 : DatumGetInt64(count);
}

// How many outgoing messages wait for a relay (undelivered, dead ones included): committed work
// that no other service has received yet. Their table holds no delivered one.
int64 undelivered_messages() {
    return count_in_table_of_1_3("outbox_messages",
                                 "SELECT pg_catalog.count(*) FROM inbox.outbox_messages");
}

// How many streams have a committed position: a row each.
int64 streams_with_positions() {
    return count_in_table_of_1_3("stream_positions",
                                 "SELECT pg_catalog.count(*) FROM inbox.stream_positions");
}

[[noreturn]] void refuse_drop_with_positions(int64 streams) {
    ereport(ERROR,
            (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
             errmsg_plural("dropping extension inbox would delete the position of %lld stream",
                           "dropping extension inbox would delete the positions of %lld streams",
                           static_cast<unsigned long>(streams), static_cast<long long>(streams)),
             errdetail("The positions record how far each stream was processed: without them, "
                       "its consumers resume where their log says, and process again what came "
                       "after that."),
             errhint("Keep them first if they matter (pg_dump includes them). To drop them, SET "
                     "inbox.allow_drop_with_markers = on and drop again.")));
    pg_unreachable();
}

[[noreturn]] void refuse_drop_with_undelivered(int64 messages) {
    ereport(ERROR,
            (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
             errmsg_plural("dropping extension inbox would delete %lld undelivered outgoing "
                           "message",
                           "dropping extension inbox would delete %lld undelivered outgoing "
                           "messages",
                           static_cast<unsigned long>(messages), static_cast<long long>(messages)),
             errdetail("Their transactions committed: without them, the services they are for "
                       "never hear of that work."),
             errhint("Let a relay deliver them (inbox.outbox_stats shows how many wait), or keep "
                     "them first (pg_dump includes them). To drop them, SET "
                     "inbox.allow_drop_with_markers = on and drop again.")));
    pg_unreachable();
}

}  // namespace

void refuse_drop_with_markers(int64 consumers) {
    ereport(ERROR,
            (errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
             consumers < 0 ? errmsg("dropping extension inbox would delete its markers")
                           : errmsg_plural("dropping extension inbox would delete the markers of "
                                           "%lld consumer",
                                           "dropping extension inbox would delete the markers of "
                                           "%lld consumers",
                                           static_cast<unsigned long>(consumers),
                                           static_cast<long long>(consumers)),
             errdetail("The markers record which messages were processed: without them, every "
                       "redelivery would be processed again."),
             errhint("Keep them first if they matter (pg_dump includes them). To drop them, "
                     "SET inbox.allow_drop_with_markers = on and drop again; after CREATE "
                     "EXTENSION, inbox.grant_access gives roles their privileges back.")));
    pg_unreachable();
}

extern "C" {

PG_FUNCTION_INFO_V1(inbox_guard_drop);
PGDLLEXPORT Datum inbox_guard_drop(PG_FUNCTION_ARGS) {
    Node* statement = triggering_statement(fcinfo, "inbox.guard_drop()");
    if (allow_drop_with_markers || !drops_inbox(statement)) PG_RETURN_VOID();
    int64 consumers = consumers_with_markers();
    if (consumers > 0) refuse_drop_with_markers(consumers);
    int64 messages = undelivered_messages();
    if (messages > 0) refuse_drop_with_undelivered(messages);
    int64 streams = streams_with_positions();
    if (streams > 0) refuse_drop_with_positions(streams);
    PG_RETURN_VOID();
}
}
