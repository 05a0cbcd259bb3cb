// inbox.marker_counts(): per registered consumer, the markers retained and the oldest, read by the
// inbox.stats view (docs/operations.md, "Monitoring"). One consumer at a time, each statement an
// index descent or a bounded scan on a local table; and each one a statement Citus can plan on a
// distributed table, where a view's correlated subqueries over the markers cannot be planned at
// all. Every consumer, owned or not: a monitoring role's numbers do not depend on owners.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <algorithm>
#include <cmath>

#include "pg/spi.hpp"
#include "store/marker_table.hpp"

namespace {

// Exact up to this many markers; above, an estimate from a sample of the table's pages.
constexpr int64 exact_limit = 1000;
constexpr double sampled_pages = 1000;

MarkerStatement registered_consumers = {
    .sql = "SELECT id, name FROM inbox.consumer_registry ORDER BY id",
    .nargs = 0,
    .argtypes = {},
    .plan = nullptr};

// In the retention index's order, so that the scan stops at 1001 whatever the planner's
// statistics say (a bitmap scan, which it may choose before an ANALYZE, reads every entry).
MarkerStatement bounded_count = {
    .sql =
        "SELECT pg_catalog.count(*) FROM (SELECT 1 FROM inbox.markers m "
        "WHERE m.consumer_id OPERATOR(pg_catalog.=) $1 ORDER BY m.time_bucket LIMIT 1001) bounded",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// The oldest bucket is one descent of the retention index; the oldest second is in it.
MarkerStatement oldest_marker = {
    .sql =
        "SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz OPERATOR(pg_catalog.+) "
        "(((m.time_bucket::pg_catalog.int8 OPERATOR(pg_catalog.*) 256) OPERATOR(pg_catalog.+) "
        "pg_catalog.min(m.time_offset::pg_catalog.int4 OPERATOR(pg_catalog.&) 255))"
        "::pg_catalog.float8 OPERATOR(pg_catalog.*) '1 s'::pg_catalog.interval) "
        "FROM inbox.markers m WHERE m.consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND m.time_bucket OPERATOR(pg_catalog.=) (SELECT pg_catalog.min(o.time_bucket) "
        "FROM inbox.markers o WHERE o.consumer_id OPERATOR(pg_catalog.=) $1) "
        "GROUP BY m.time_bucket",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// The table's pages: on this node (pg_relation_size), or the sum over its shards
// (citus_relation_size).
#define PAGES_OF_MARKERS(size_function)                                         \
    {                                                                           \
        .sql = "SELECT pg_catalog." size_function                               \
               "('inbox.markers'::pg_catalog.regclass) OPERATOR(pg_catalog./) " \
               "pg_catalog.current_setting('block_size')::pg_catalog.int8",     \
        .nargs = 0, .argtypes = {}, .plan = nullptr                             \
    }
MarkerStatement local_pages = PAGES_OF_MARKERS("pg_relation_size");
MarkerStatement distributed_pages = PAGES_OF_MARKERS("citus_relation_size");
#undef PAGES_OF_MARKERS

// Markers per consumer in a sample of about `sampled_pages` pages ($1 percent of the table).
MarkerStatement sample_counts = {
    .sql =
        "SELECT s.consumer_id, pg_catalog.count(*) FROM inbox.markers s "
        "TABLESAMPLE pg_catalog.system ($1) REPEATABLE (0) GROUP BY s.consumer_id",
    .nargs = 1,
    .argtypes = {FLOAT8OID},
    .plan = nullptr};

int64 first_int8(bool* isnull) {
    *isnull = true;
    if (SPI_processed == 0) return 0;
    return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull));
}

// The sample, scaled to the whole table: markers[i] for consumer id i (0 when none was seen).
struct Sample {
    bool taken;
    double* markers;
};

void take_sample(Sample* sample) {
    bool isnull = true;
    bool distributed = marker_store()->distribution != StoreDistribution::local;
    execute_as_store_owner(distributed ? &distributed_pages : &local_pages, nullptr);
    double pages = std::max<double>(1, static_cast<double>(first_int8(&isnull)));
    double percent = std::min<double>(100, 100 * sampled_pages / pages);
    Datum value = Float8GetDatum(percent);
    execute_as_store_owner(&sample_counts, &value);
    sample->markers = static_cast<double*>(palloc0(sizeof(double) * (PG_INT16_MAX + 1)));
    for (uint64 row = 0; row < SPI_processed; row++) {
        int16 consumer = DatumGetInt16(
            SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull));
        int64 seen = DatumGetInt64(
            SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 2, &isnull));
        if (consumer >= 0) sample->markers[consumer] = static_cast<double>(seen) * 100 / percent;
    }
    sample->taken = true;
}

struct ConsumerMarkers {
    Datum consumer;  // text, in the caller's memory
    int64 retained;
    bool has_oldest;
    TimestampTz oldest;
};

ConsumerMarkers count_markers(int16 consumer, Datum name, Sample* sample) {
    ConsumerMarkers counted = {name, 0, false, 0};
    Datum id = Int16GetDatum(consumer);
    bool isnull = true;
    execute_as_store_owner(&bounded_count, &id);
    counted.retained = first_int8(&isnull);
    if (counted.retained > exact_limit) {
        if (!sample->taken) take_sample(sample);
        counted.retained =
            std::max<int64>(exact_limit + 1, std::llround(sample->markers[consumer]));
    }
    execute_as_store_owner(&oldest_marker, &id);
    counted.oldest = static_cast<TimestampTz>(first_int8(&isnull));
    counted.has_oldest = !isnull;
    return counted;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_marker_counts);
PGDLLEXPORT Datum inbox_marker_counts(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    pg::spi_connect();
    execute_as_store_owner(&registered_consumers, nullptr);
    uint64 consumer_count = SPI_processed;
    SPITupleTable* consumers = SPI_tuptable;  // the next statements make tables of their own
    auto* counted =
        static_cast<ConsumerMarkers*>(SPI_palloc(sizeof(ConsumerMarkers) * Max(consumer_count, 1)));
    Sample sample = {false, nullptr};
    for (uint64 i = 0; i < consumer_count; i++) {
        bool isnull = true;
        int16 id = DatumGetInt16(SPI_getbinval(consumers->vals[i], consumers->tupdesc, 1, &isnull));
        Datum name = SPI_datumTransfer(
            SPI_getbinval(consumers->vals[i], consumers->tupdesc, 2, &isnull), false, -1);
        counted[i] = count_markers(id, name, &sample);
    }
    SPI_finish();

    for (uint64 i = 0; i < consumer_count; i++) {
        Datum values[3] = {counted[i].consumer, Int64GetDatum(counted[i].retained),
                           TimestampTzGetDatum(counted[i].oldest)};
        bool nulls[3] = {false, false, !counted[i].has_oldest};
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return (Datum)0;
}
}
