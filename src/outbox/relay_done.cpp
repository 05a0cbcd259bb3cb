// inbox.relay_done in the library: the messages settled directly (direct_done.hpp). Where the
// direct settlement cannot serve the tables (a trigger, a permission hook), the SQL edition's
// inbox.relay_done_messages does it. Declared SECURITY DEFINER: it runs as the extension's owner,
// who owns the tables.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/timestamp.h"
}

#include "outbox/direct_done.hpp"
#include "outbox/relay_on_coordinator.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

namespace {

const char* const done_sql = "SELECT inbox.relay_done_messages($1)";
SPIPlanPtr done_plan = nullptr;

int32 done_with_statement(Datum ids) {
    if (done_plan == nullptr) {
        const Oid types[] = {UUIDARRAYOID};
        done_plan = pg::prepare_kept_plan(done_sql, 1, types);
    }
    pg::spi_connect();
    const Datum values[] = {ids};
    pg::execute_plan(done_plan, done_sql, values, " ");
    bool null = true;
    Datum settled = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null);
    int32 count = null ? 0 : DatumGetInt32(settled);
    SPI_finish();
    return count;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_relay_done);
PGDLLEXPORT Datum inbox_relay_done(PG_FUNCTION_ARGS) {
    TimestampTz now = GetCurrentTimestamp();
    require_relay_on_coordinator("inbox.relay_done()");
    if (PG_ARGISNULL(0))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("ids must not be NULL")));
    // inbox.outbox_retention = 0 keeps no delivered message: deleted, not recorded.
    bool keep = outbox_retention_s != 0;
    DoneTables tables;
    if (!direct_done_possible(keep, &tables))
        PG_RETURN_INT32(done_with_statement(PG_GETARG_DATUM(0)));
    // A settlement is a write (25006 in a read-only transaction, on a standby), as the
    // statement's DELETE is.
    PreventCommandIfReadOnly("relay_done()");
    PG_RETURN_INT32(settle_directly(tables, PG_GETARG_ARRAYTYPE_P(0), keep, now));
}
}
