// DROP EXTENSION inbox (or DROP SCHEMA inbox CASCADE) on a Citus coordinator: the event trigger
// inbox_shards_first drops the shards of the store's Citus tables before the extension goes.
// Citus drops an extension's distributed table as if it were a partition (its metadata only),
// which would leave every shard on the workers, and their schema refusing the next CREATE
// EXTENSION.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "executor/spi.h"
}

#include "drop/drop_statement.hpp"
#include "pg/spi.hpp"

extern "C" {

PG_FUNCTION_INFO_V1(inbox_drop_shards_first);
PGDLLEXPORT Datum inbox_drop_shards_first(PG_FUNCTION_ARGS) {
    if (!drops_inbox(triggering_statement(fcinfo, "inbox.drop_shards_first()"))) PG_RETURN_VOID();
    pg::spi_connect();
    int rc = SPI_execute("SELECT inbox.leave_citus(false)", false, 0);
    if (rc != SPI_OK_SELECT)
        elog(ERROR, "inbox.leave_citus failed: %s", SPI_result_code_string(rc));
    SPI_finish();
    PG_RETURN_VOID();
}
}
