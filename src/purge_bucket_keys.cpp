// The keys of a bucket too large for a batch, read once and deleted by key (purge_bucket_keys.hpp).
// Through SPI only, without ctid: the same statements serve a distributed store.
extern "C" {
#include "postgres.h"
#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include "marker_table.hpp"
#include "purge_bucket_keys.hpp"

namespace {

MarkerStatement bucket_keys = {
    .sql =
        "SELECT message_key FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND time_bucket OPERATOR(pg_catalog.=) $2 AND time_offset OPERATOR(pg_catalog.<=) $3 "
        "ORDER BY message_key",
    .nargs = 3,
    .argtypes = {INT2OID, INT4OID, CHAROID},
    .plan = nullptr};

// A batch's keys are the next ones in key order, [$5, $6]. Where the consumer has not many more
// markers than the bucket's keys (a burst is most of its consumer's markers), they go a range of
// the primary key at a time: the ranges do not overlap, so all of them together walk at most the
// consumer's markers. Else each key is probed. Whatever the statistics say, no plan may walk the
// bucket (or all the consumer's markers), whose dead entries the earlier batches left: one plan
// for every call (a custom plan may prefer a scan of the consumer), planned without sequential
// scans (planned_for_the_keys), and the bucket compared as "time_bucket + 0", which no index
// serves.
MarkerStatement some_markers_of_consumer = {
    .sql =
        "SELECT pg_catalog.count(*) FROM (SELECT message_key FROM inbox.markers "
        "WHERE consumer_id OPERATOR(pg_catalog.=) $1 LIMIT $2) AS markers_of_consumer",
    .nargs = 2,
    .argtypes = {INT2OID, INT8OID},
    .plan = nullptr};
#define EXPIRED_IN_BUCKET                                                    \
    " AND (time_bucket OPERATOR(pg_catalog.+) 0) OPERATOR(pg_catalog.=) $3 " \
    "AND time_offset OPERATOR(pg_catalog.<=) $4"
#define OF_KEYS \
    "consumer_id OPERATOR(pg_catalog.=) $1 AND message_key OPERATOR(pg_catalog.=) ANY ($2)"
#define IN_KEY_RANGE                                                                        \
    "consumer_id OPERATOR(pg_catalog.=) $1 AND message_key OPERATOR(pg_catalog.>=) $5 AND " \
    "message_key OPERATOR(pg_catalog.<=) $6"
#define KEY_STATEMENT(table, keys)                                                      \
    {                                                                                   \
        .sql = "DELETE FROM inbox." table " WHERE " keys EXPIRED_IN_BUCKET, .nargs = 6, \
        .argtypes = {INT2OID, BYTEAARRAYOID, INT4OID, CHAROID, BYTEAOID, BYTEAOID},     \
        .plan = nullptr                                                                 \
    }
MarkerStatement delete_markers_of_keys = KEY_STATEMENT("markers", OF_KEYS);
MarkerStatement delete_details_of_keys = KEY_STATEMENT("marker_details", OF_KEYS);
MarkerStatement delete_markers_in_key_range = KEY_STATEMENT("markers", IN_KEY_RANGE);
MarkerStatement delete_details_in_key_range = KEY_STATEMENT("marker_details", IN_KEY_RANGE);
#undef KEY_STATEMENT
#undef IN_KEY_RANGE
#undef OF_KEYS
#undef EXPIRED_IN_BUCKET

constexpr long keys_per_fetch = 10000;

Datum offset_datum(std::uint8_t offset) {
    return CharGetDatum(static_cast<char>(offset));
}

// Copies every row of the open SPI cursor into the tuplestore, fetching as the store's owner;
// returns how many.
int64 read_keys(Portal cursor, Tuplestorestate* keys) {
    int64 count = 0;
    for (;;) {
        CallerIdentity caller = become_store_owner(marker_store());
        SPI_cursor_fetch(cursor, true, keys_per_fetch);
        return_to_caller(caller);
        if (SPI_processed == 0) break;
        count += static_cast<int64>(SPI_processed);
        for (uint64 row = 0; row < SPI_processed; row++)
            tuplestore_puttuple(keys, SPI_tuptable->vals[row]);
        SPI_freetuptable(SPI_tuptable);
    }
    SPI_freetuptable(SPI_tuptable);
    return count;
}

// How many of the consumer's markers the ranges may walk, for each key of the bucket.
constexpr int64 range_walk_per_key = 2;

// A table of a few pages makes a sequential scan look cheaper than any index, and a plan kept
// for the backend's life would then walk the bucket (or the whole table) for every batch. One
// generic plan, except on Citus, which plans a distributed statement with its parameters' values
// (the shards' own plans are made on the workers).
int planned_for_the_keys() {
    int nest_level = NewGUCNestLevel();
    (void)set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    if (marker_store()->distribution == StoreDistribution::local)
        (void)set_config_option("plan_cache_mode", "force_generic_plan", PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
    return nest_level;
}

bool few_other_markers(int16 consumer_id, int64 keys) {
    int64 walk_limit = range_walk_per_key * keys;
    Datum values[2] = {Int16GetDatum(consumer_id), Int64GetDatum(walk_limit + 1)};
    int nest_level = planned_for_the_keys();
    execute_as_store_owner(&some_markers_of_consumer, values);
    AtEOXact_GUC(false, nest_level);
    bool isnull = false;
    return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) <=
           walk_limit;
}

// values: the parameters of the key statements.
int64 delete_markers_and_details(const BucketKeys* open, const Datum* values) {
    int nest_level = planned_for_the_keys();
    execute_as_store_owner(
        open->walk_key_ranges ? &delete_markers_in_key_range : &delete_markers_of_keys, values);
    int64 deleted = static_cast<int64>(SPI_processed);
    execute_as_store_owner(
        open->walk_key_ranges ? &delete_details_in_key_range : &delete_details_of_keys, values);
    AtEOXact_GUC(false, nest_level);
    return deleted;
}

}  // namespace

void open_bucket_keys(BucketKeys* open, MemoryContext parent, int16 consumer_id, int32 bucket,
                      std::uint8_t last_offset) {
    open->context = AllocSetContextCreate(parent, "inbox purge bucket keys", ALLOCSET_SMALL_SIZES);
    open->consumer_id = consumer_id;
    open->bucket = bucket;
    open->last_offset = last_offset;
    MemoryContext caller_context = MemoryContextSwitchTo(open->context);
    TupleDesc row = CreateTemplateTupleDesc(1);
    TupleDescInitEntry(row, 1, "message_key", BYTEAOID, -1, 0);
    open->slot = MakeSingleTupleTableSlot(row, &TTSOpsMinimalTuple);
    // Kept across the commits between batches, as a holdable cursor's rows are.
    open->keys = tuplestore_begin_heap(false, true, work_mem);
    MemoryContextSwitchTo(caller_context);

    Datum values[3] = {Int16GetDatum(consumer_id), Int32GetDatum(bucket),
                       offset_datum(last_offset)};
    SPIPlanPtr plan = prepared_plan(&bucket_keys);
    CallerIdentity caller = become_store_owner(marker_store());
    Portal cursor = SPI_cursor_open(nullptr, plan, values, nullptr, false);
    return_to_caller(caller);
    int64 keys = read_keys(cursor, open->keys);
    SPI_cursor_close(cursor);
    open->walk_key_ranges = few_other_markers(consumer_id, keys);
}

bool delete_next_bucket_keys(BucketKeys* open, int64 limit, int64* deleted) {
    Datum* keys = static_cast<Datum*>(palloc(sizeof(Datum) * limit));
    int count = 0;
    bool drained = false;
    while (count < limit) {
        if (!tuplestore_gettupleslot(open->keys, true, false, open->slot)) {
            drained = true;
            break;
        }
        bool isnull = false;
        keys[count++] = datumCopy(slot_getattr(open->slot, 1, &isnull), false, -1);
    }
    // A row read back from the temporary file lives in the caller's memory, gone by the next call.
    ExecClearTuple(open->slot);
    *deleted = 0;
    if (count > 0) {
        ArrayType* key_array = construct_array(keys, count, BYTEAOID, -1, false, TYPALIGN_INT);
        Datum values[6] = {Int16GetDatum(open->consumer_id),
                           PointerGetDatum(key_array),
                           Int32GetDatum(open->bucket),
                           offset_datum(open->last_offset),
                           keys[0],
                           keys[count - 1]};
        *deleted = delete_markers_and_details(open, values);
    }
    return drained;
}

void close_bucket_keys(BucketKeys* open) {
    if (open->context == nullptr) return;
    tuplestore_end(open->keys);
    ExecDropSingleTupleTableSlot(open->slot);
    MemoryContextDelete(open->context);
    open->context = nullptr;
}
