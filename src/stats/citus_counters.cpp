// See citus_counters.hpp. The worker nodes are reached through Citus's own connections
// (run_command_on_workers), as the owner of the markers, whom every node lets run the extension's
// functions (Citus does not copy GRANTs on an extension's functions to the workers).
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
}

#include <cstring>

#include "pg/spi.hpp"
#include "stats/citus_counters.hpp"
#include "store/marker_table.hpp"

namespace {

// One row per consumer row of each worker node (one row with NULL counters for a node with
// none), and the node's answer when it could not be read.
MarkerStatement worker_counters = {
    .sql =
        "SELECT w.nodename, w.nodeport, w.success, w.result, k.consumer, k.applied, "
        "k.duplicates, k.last_duplicate_at, k.stats_reset, k.in_progress, k.payload_mismatches, "
        "k.poisoned "
        "FROM pg_catalog.run_command_on_workers('SELECT COALESCE(pg_catalog.json_agg(k), "
        "''[]''::pg_catalog.json) FROM inbox.stats_counters() k') w "
        "LEFT JOIN LATERAL pg_catalog.json_to_recordset(CASE WHEN w.success "
        "THEN w.result::pg_catalog.json END) AS k(consumer pg_catalog.text, "
        "applied pg_catalog.int8, duplicates pg_catalog.int8, "
        "last_duplicate_at pg_catalog.timestamptz, stats_reset pg_catalog.timestamptz, "
        "in_progress pg_catalog.int8, payload_mismatches pg_catalog.int8, "
        "poisoned pg_catalog.int8) ON true",
    .nargs = 0,
    .argtypes = {},
    .plan = nullptr};

// A node without the library preloaded counts nothing, and has nothing to reset.
MarkerStatement reset_workers = {
    .sql =
        "SELECT w.nodename, w.nodeport, w.success, w.result "
        "FROM pg_catalog.run_command_on_workers('SELECT inbox.stats_reset() WHERE "
        "pg_catalog.current_setting(''inbox.max_consumers'', true) IS NOT NULL') w",
    .nargs = 0,
    .argtypes = {},
    .plan = nullptr};

bool on_citus_coordinator() {
    return marker_store()->distribution == StoreDistribution::citus_coordinator;
}

// Raises the error of a node that did not answer (columns nodename, nodeport, success, result).
void require_answer(HeapTuple row, TupleDesc columns, const char* what) {
    bool isnull = true;
    if (DatumGetBool(SPI_getbinval(row, columns, 3, &isnull))) return;
    ereport(ERROR, (errcode(ERRCODE_CONNECTION_FAILURE),
                    errmsg("could not %s of worker node %s:%d", what, SPI_getvalue(row, columns, 1),
                           DatumGetInt32(SPI_getbinval(row, columns, 2, &isnull))),
                    errdetail("%s", SPI_getvalue(row, columns, 4))));
}

int64 int8_column(HeapTuple row, TupleDesc columns, int column) {
    bool isnull = true;
    Datum value = SPI_getbinval(row, columns, column, &isnull);
    return isnull ? 0 : DatumGetInt64(value);
}

void add_counters(StatsCounters* total, HeapTuple row, TupleDesc columns) {
    total->applied += int8_column(row, columns, 6);
    total->duplicates += int8_column(row, columns, 7);
    total->last_duplicate_at = Max(total->last_duplicate_at, int8_column(row, columns, 8));
    total->in_progress += int8_column(row, columns, 10);
    total->payload_mismatches += int8_column(row, columns, 11);
    total->poisoned += int8_column(row, columns, 12);
}

// The snapshot's row of `consumer`, added (zeroed) when it has none. The rows are a palloc'd
// chunk of at least `*capacity` rows, grown as needed.
StatsCounters* consumer_counters(StatsSnapshot* snapshot, int* capacity, const char* consumer) {
    for (int i = 0; i < snapshot->consumer_count; i++)
        if (std::strcmp(snapshot->consumers[i].consumer, consumer) == 0)
            return &snapshot->consumers[i].counters;
    if (snapshot->consumer_count == *capacity) {
        *capacity = Max(*capacity * 2, 16);
        snapshot->consumers = static_cast<StatsConsumerRow*>(
            repalloc(snapshot->consumers, sizeof(StatsConsumerRow) * *capacity));
    }
    StatsConsumerRow* added = &snapshot->consumers[snapshot->consumer_count++];
    std::memset(added, 0, sizeof(StatsConsumerRow));
    strlcpy(added->consumer, consumer, sizeof(added->consumer));
    return &added->counters;
}

}  // namespace

void add_worker_node_counters(StatsSnapshot* snapshot) {
    if (!on_citus_coordinator()) return;
    int capacity = snapshot->consumer_count;  // at least
    pg::spi_connect();
    execute_as_store_owner(&worker_counters, nullptr);
    for (uint64 i = 0; i < SPI_processed; i++) {
        HeapTuple row = SPI_tuptable->vals[i];
        TupleDesc columns = SPI_tuptable->tupdesc;
        require_answer(row, columns, "read the inbox counters");
        bool no_counters = true, untracked = true;
        (void)SPI_getbinval(row, columns, 9, &no_counters);  // stats_reset: NULL without rows
        if (no_counters) continue;
        (void)SPI_getbinval(row, columns, 5, &untracked);
        StatsCounters* total =
            untracked ? &snapshot->untracked
                      : consumer_counters(snapshot, &capacity, SPI_getvalue(row, columns, 5));
        add_counters(total, row, columns);
        // Since when every node counts: the latest of their starts and resets.
        snapshot->counting_since = Max(snapshot->counting_since, int8_column(row, columns, 9));
    }
    SPI_finish();
}

void reset_worker_node_counters() {
    if (!on_citus_coordinator()) return;
    pg::spi_connect();
    execute_as_store_owner(&reset_workers, nullptr);
    for (uint64 i = 0; i < SPI_processed; i++)
        require_answer(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, "reset the inbox counters");
    SPI_finish();
}
