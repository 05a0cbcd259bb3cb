// SQL access to the claim counters: inbox.stats_counters() and inbox.stats_counters_1_3() (read
// by the inbox.stats view) and inbox.stats_reset().
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "pg/compat.hpp"
#include "pg/spi.hpp"
#include "stats/citus_counters.hpp"
#include "stats/counters_privilege.hpp"
#include "stats/stats_table.hpp"

namespace {

// consumer, applied, duplicates, last_duplicate_at, stats_reset, in_progress,
// payload_mismatches, poisoned, attempts_evicted. A database still at 1.0 declares the first
// five, inbox.stats_counters() of 1.1 the first eight: a row takes as many values as the declared
// result has columns.
constexpr int counter_columns = 9;

void put_row(ReturnSetInfo* result, const char* consumer, const StatsCounters& counters,
             TimestampTz counting_since) {
    Datum values[counter_columns];
    bool nulls[counter_columns] = {};
    if (consumer != nullptr)
        values[0] = CStringGetTextDatum(consumer);
    else
        nulls[0] = true;
    values[1] = Int64GetDatum(counters.applied);
    values[2] = Int64GetDatum(counters.duplicates);
    if (counters.last_duplicate_at != 0)
        values[3] = TimestampTzGetDatum(counters.last_duplicate_at);
    else
        nulls[3] = true;
    values[4] = TimestampTzGetDatum(counting_since);
    values[5] = Int64GetDatum(counters.in_progress);
    values[6] = Int64GetDatum(counters.payload_mismatches);
    values[7] = Int64GetDatum(counters.poisoned);
    values[8] = Int64GetDatum(counters.attempts_evicted);
    tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
}

// One row per tracked consumer of the current database, then the database row (NULL consumer:
// claims of consumers that found the table full). No rows without the preload. On a Citus
// coordinator, the counts of the whole cluster. Every consumer's row, owned or not
// (details_visibility.hpp).
void emit_counter_rows(FunctionCallInfo fcinfo) {
    InitMaterializedSRF(fcinfo, 0);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (!stats_table_available()) return;

    StatsSnapshot snapshot = stats_table_snapshot(MyDatabaseId);
    add_worker_node_counters(&snapshot);
    for (int i = 0; i < snapshot.consumer_count; i++)
        put_row(result, snapshot.consumers[i].consumer, snapshot.consumers[i].counters,
                snapshot.counting_since);
    put_row(result, nullptr, snapshot.untracked, snapshot.counting_since);
}

}  // namespace

extern "C" {

// 1.1's columns (a database at 1.0: its first five).
PG_FUNCTION_INFO_V1(inbox_stats_counters);
PGDLLEXPORT Datum inbox_stats_counters(PG_FUNCTION_ARGS) {
    emit_counter_rows(fcinfo);
    return (Datum)0;
}

// 1.3: also attempts_evicted.
PG_FUNCTION_INFO_V1(inbox_stats_counters_1_3);
PGDLLEXPORT Datum inbox_stats_counters_1_3(PG_FUNCTION_ARGS) {
    check_counters_privilege();
    emit_counter_rows(fcinfo);
    return (Datum)0;
}

PG_FUNCTION_INFO_V1(inbox_stats_reset);
PGDLLEXPORT Datum inbox_stats_reset(PG_FUNCTION_ARGS) {
    if (!stats_table_available())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("inbox statistics are not being collected"),
                        errhint("Add inbox to shared_preload_libraries and restart the server.")));
    stats_table_reset(MyDatabaseId);
    reset_worker_node_counters();
    PG_RETURN_VOID();
}
}
