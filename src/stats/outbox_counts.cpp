// inbox.outbox_counts(): per cause consumer (NULL: sent outside any claim), the outgoing
// messages not delivered and not dead, and the send time of the oldest, read by inbox.stats.
// Read as the tables' owner, as marker_counts.cpp reads the markers: the view reads no table
// itself, which Citus would plan apart with the reader's own privileges (a statement that joins
// it with the registry, a reference table). Their table holds no delivered message.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/tuplestore.h"
}

#include "pg/spi.hpp"
#include "stats/counters_privilege.hpp"
#include "store/marker_table.hpp"

namespace {

MarkerStatement pending_by_cause = {
    .sql =
        "SELECT o.cause_consumer, pg_catalog.count(*), pg_catalog.min(o.created_at) "
        "FROM inbox.outbox_messages o WHERE o.dead_at IS NULL "
        "GROUP BY o.cause_consumer",
    .nargs = 0,
    .argtypes = {},
    .plan = nullptr};

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_outbox_counts);
PGDLLEXPORT Datum inbox_outbox_counts(PG_FUNCTION_ARGS) {
    check_counters_privilege();
    InitMaterializedSRF(fcinfo, 0);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    pg::spi_connect();
    execute_as_store_owner(&pending_by_cause, nullptr);
    for (uint64 row = 0; row < SPI_processed; row++) {
        Datum values[3];
        bool nulls[3];
        for (int column = 0; column < 3; column++)
            values[column] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
                                           column + 1, &nulls[column]);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    SPI_finish();
    return (Datum)0;
}
}
