// The rows of a bucket too large for a batch, read once and deleted batch by batch
// (purge_bucket_rows.hpp).
extern "C" {
#include "postgres.h"
#include "access/tupdesc.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
}

#include "pg/compat.hpp"
#include "purge/purge_bucket_rows.hpp"
#include "store/marker_table.hpp"

namespace {

// $1 the consumer, $2 the bucket, $3 its last expired second, $4 how many rows at most. The
// rows come in the order of the retention index, which for one (consumer, bucket) is the order
// of the table's pages.
#define OF_BUCKET                                                                           \
    " FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 "                      \
    "AND time_bucket OPERATOR(pg_catalog.=) $2 AND time_offset OPERATOR(pg_catalog.<=) $3 " \
    "LIMIT $4"
#define READ_STATEMENT(column)                                            \
    {                                                                     \
        .sql = "SELECT " column OF_BUCKET, .nargs = 4,                    \
        .argtypes = {INT2OID, INT4OID, CHAROID, INT8OID}, .plan = nullptr \
    }
MarkerStatement ctids_of_bucket = READ_STATEMENT("ctid");
MarkerStatement keys_of_bucket = READ_STATEMENT("message_key");
#undef READ_STATEMENT
#undef OF_BUCKET

MarkerStatement details_of_bucket = {
    .sql =
        "SELECT 1 FROM inbox.marker_details WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND time_bucket OPERATOR(pg_catalog.=) $2 AND time_offset OPERATOR(pg_catalog.<=) $3 "
        "LIMIT 1",
    .nargs = 3,
    .argtypes = {INT2OID, INT4OID, CHAROID},
    .plan = nullptr};

// $1 the consumer, $2 the rows (tid[] or bytea[]), $3 the bucket, $4 its last expired second.
// No plan may walk the bucket (or all the consumer's markers), whose dead entries the earlier
// batches left: one plan for every call (a custom plan may prefer a scan of the consumer),
// planned without sequential scans (planned_for_the_rows), and the columns that an index could
// serve compared as "column + 0" wherever the rows themselves lead.
#define EXPIRED_IN_BUCKET                                                    \
    " AND (time_bucket OPERATOR(pg_catalog.+) 0) OPERATOR(pg_catalog.=) $3 " \
    "AND time_offset OPERATOR(pg_catalog.<=) $4"
#define OF_CTIDS                            \
    "ctid OPERATOR(pg_catalog.=) ANY ($2) " \
    "AND (consumer_id OPERATOR(pg_catalog.+) 0) OPERATOR(pg_catalog.=) $1"
#define OF_KEYS \
    "consumer_id OPERATOR(pg_catalog.=) $1 AND message_key OPERATOR(pg_catalog.=) ANY ($2)"
#define DELETE_STATEMENT(table, rows, array_type, returning)                                      \
    {                                                                                             \
        .sql = "DELETE FROM inbox." table " WHERE " rows EXPIRED_IN_BUCKET returning, .nargs = 4, \
        .argtypes = {INT2OID, array_type, INT4OID, CHAROID}, .plan = nullptr                      \
    }
MarkerStatement delete_markers_of_ctids = DELETE_STATEMENT("markers", OF_CTIDS, TIDARRAYOID, "");
// Where the bucket has details, which are found by key.
MarkerStatement delete_markers_of_ctids_giving_keys =
    DELETE_STATEMENT("markers", OF_CTIDS, TIDARRAYOID, " RETURNING message_key");
MarkerStatement delete_markers_of_keys = DELETE_STATEMENT("markers", OF_KEYS, BYTEAARRAYOID, "");
MarkerStatement delete_details_of_keys =
    DELETE_STATEMENT("marker_details", OF_KEYS, BYTEAARRAYOID, "");
#undef DELETE_STATEMENT
#undef OF_KEYS
#undef OF_CTIDS
#undef EXPIRED_IN_BUCKET

// The details of the bucket's expired markers that are gone: $1 the consumer, $2 the bucket, $3
// its last expired second.
MarkerStatement delete_details_without_marker = {
    .sql =
        "DELETE FROM inbox.marker_details d WHERE d.consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND d.time_bucket OPERATOR(pg_catalog.=) $2 AND d.time_offset OPERATOR(pg_catalog.<=) $3 "
        "AND NOT EXISTS (SELECT FROM inbox.markers m "
        "WHERE m.consumer_id OPERATOR(pg_catalog.=) d.consumer_id "
        "AND m.message_key OPERATOR(pg_catalog.=) d.message_key)",
    .nargs = 3,
    .argtypes = {INT2OID, INT4OID, CHAROID},
    .plan = nullptr};

constexpr long rows_per_fetch = 10000;

Datum offset_datum(std::uint8_t offset) {
    return CharGetDatum(static_cast<char>(offset));
}

Oid row_type(const BucketRows* open) {
    return open->by_ctid ? TIDOID : BYTEAOID;
}

// A ctid names one row only in a plain table of this node.
bool rows_have_ctids() {
    const MarkerStore* store = marker_store();
    return store->distribution == StoreDistribution::local &&
           get_rel_relkind(store->markers) == RELKIND_RELATION;
}

// A table of a few pages makes a sequential scan look cheaper than any index, and a plan kept
// for the backend's life would then walk the bucket (or the whole table) for every batch. One
// generic plan, except on Citus, which plans a distributed statement with its parameters' values
// (the shards' own plans are made on the workers).
int planned_for_the_rows() {
    int nest_level = NewGUCNestLevel();
    (void)set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                            true, 0, false);
    if (marker_store()->distribution == StoreDistribution::local)
        (void)set_config_option("plan_cache_mode", "force_generic_plan", PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
    return nest_level;
}

// Copies every row of the open SPI cursor into the tuplestore, fetching as the store's owner;
// returns how many.
int64 read_rows(Portal cursor, Tuplestorestate* rows) {
    int64 count = 0;
    for (;;) {
        CallerIdentity caller = become_store_owner(marker_store());
        SPI_cursor_fetch(cursor, true, rows_per_fetch);
        return_to_caller(caller);
        if (SPI_processed == 0) break;
        count += static_cast<int64>(SPI_processed);
        for (uint64 row = 0; row < SPI_processed; row++)
            tuplestore_puttuple(rows, SPI_tuptable->vals[row]);
        SPI_freetuptable(SPI_tuptable);
    }
    SPI_freetuptable(SPI_tuptable);
    return count;
}

// The next read of the open bucket, from its start: the rows deleted since are no longer there.
void read_bucket(BucketRows* open) {
    int64 limit = open->read_limit > 0 ? open->read_limit : PG_INT64_MAX;
    Datum values[4] = {Int16GetDatum(open->consumer_id), Int32GetDatum(open->bucket),
                       offset_datum(open->last_offset), Int64GetDatum(limit)};
    int nest_level = planned_for_the_rows();
    SPIPlanPtr plan = prepared_plan(open->by_ctid ? &ctids_of_bucket : &keys_of_bucket);
    CallerIdentity caller = become_store_owner(marker_store());
    Portal cursor = SPI_cursor_open(nullptr, plan, values, nullptr, false);
    return_to_caller(caller);
    AtEOXact_GUC(false, nest_level);
    tuplestore_clear(open->rows);
    open->read_all = read_rows(cursor, open->rows) < limit;
    SPI_cursor_close(cursor);
}

bool bucket_has_details(const BucketRows* open) {
    Datum values[3] = {Int16GetDatum(open->consumer_id), Int32GetDatum(open->bucket),
                       offset_datum(open->last_offset)};
    execute_as_store_owner(&details_of_bucket, values);
    return SPI_processed > 0;
}

ArrayType* array_of(const Datum* elements, int count, Oid type) {
    int16 length = 0;
    bool by_value = false;
    char align = 0;
    get_typlenbyvalalign(type, &length, &by_value, &align);
    return construct_array(const_cast<Datum*>(elements), count, type, length, by_value, align);
}

// The keys of the rows the last statement returned.
ArrayType* returned_keys() {
    auto* keys = static_cast<Datum*>(palloc(sizeof(Datum) * Max(SPI_processed, 1)));
    for (uint64 row = 0; row < SPI_processed; row++) {
        bool isnull = false;
        keys[row] = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull);
    }
    return array_of(keys, static_cast<int>(SPI_processed), BYTEAOID);
}

// values: the parameters of the delete statements, $2 the rows. A bucket without details when
// it was opened may get some before the purge is done with it: inbox.complete() stores a result
// on an old marker, between two batches or while one deletes. complete() locks the marker it
// stores on (FOR KEY SHARE), so a delete that meets it waits for its commit; the question, asked
// again after each delete with a snapshot of its own, then sees what it stored (a complete() that
// comes after the delete waits for this batch and finds no marker). Once details are found, the
// deletes return the keys by which they go; the markers just deleted returned none, so the
// bucket's details left without a marker go at once, found by the bucket.
int64 delete_markers_and_details(BucketRows* open, Datum* values) {
    int nest_level = planned_for_the_rows();
    MarkerStatement* delete_markers = !open->by_ctid      ? &delete_markers_of_keys
                                      : open->has_details ? &delete_markers_of_ctids_giving_keys
                                                          : &delete_markers_of_ctids;
    execute_as_store_owner(delete_markers, values);
    int64 deleted = static_cast<int64>(SPI_processed);
    if (deleted > 0 && open->has_details) {
        if (open->by_ctid) values[1] = PointerGetDatum(returned_keys());
        execute_as_store_owner(&delete_details_of_keys, values);
    } else if (deleted > 0 && bucket_has_details(open)) {
        open->has_details = true;
        if (open->by_ctid) {
            Datum bucket[3] = {values[0], values[2], values[3]};
            execute_as_store_owner(&delete_details_without_marker, bucket);
        } else {
            execute_as_store_owner(&delete_details_of_keys, values);
        }
    }
    AtEOXact_GUC(false, nest_level);
    return deleted;
}

}  // namespace

void open_bucket_rows(BucketRows* open, MemoryContext parent, int16 consumer_id, int32 bucket,
                      std::uint8_t last_offset, int64 read_limit) {
    open->context = AllocSetContextCreate(parent, "inbox purge bucket rows", ALLOCSET_SMALL_SIZES);
    open->consumer_id = consumer_id;
    open->bucket = bucket;
    open->last_offset = last_offset;
    open->by_ctid = rows_have_ctids();
    open->read_limit = read_limit;
    MemoryContext caller_context = MemoryContextSwitchTo(open->context);
    TupleDesc row = CreateTemplateTupleDesc(1);
    TupleDescInitEntry(row, 1, "row", row_type(open), -1, 0);
    pg::finalize_tuple_desc(row);
    open->slot = MakeSingleTupleTableSlot(row, &TTSOpsMinimalTuple);
    // Kept across the commits between batches, as a holdable cursor's rows are.
    open->rows = tuplestore_begin_heap(false, true, work_mem);
    MemoryContextSwitchTo(caller_context);
    // Asked again after each delete until some are found (delete_markers_and_details).
    open->has_details = bucket_has_details(open);
    read_bucket(open);
}

bool delete_next_bucket_rows(BucketRows* open, int64 limit, int64* deleted) {
    int16 length = 0;
    bool by_value = false;
    get_typlenbyval(row_type(open), &length, &by_value);
    auto* rows = static_cast<Datum*>(palloc(sizeof(Datum) * limit));
    int count = 0;
    bool drained = false;
    while (count < limit) {
        if (!tuplestore_gettupleslot(open->rows, true, false, open->slot)) {
            drained = true;
            break;
        }
        bool isnull = false;
        rows[count++] = datumCopy(slot_getattr(open->slot, 1, &isnull), by_value, length);
    }
    // A row read back from the temporary file lives in the caller's memory, gone by the next call.
    ExecClearTuple(open->slot);
    *deleted = 0;
    if (count > 0) {
        Datum values[4] = {Int16GetDatum(open->consumer_id),
                           PointerGetDatum(array_of(rows, count, row_type(open))),
                           Int32GetDatum(open->bucket), offset_datum(open->last_offset)};
        *deleted = delete_markers_and_details(open, values);
    }
    if (!drained || open->read_all) return drained;
    read_bucket(open);
    return tuplestore_tuple_count(open->rows) == 0;
}

void close_bucket_rows(BucketRows* open) {
    if (open->context == nullptr) return;
    tuplestore_end(open->rows);
    ExecDropSingleTupleTableSlot(open->slot);
    MemoryContextDelete(open->context);
    open->context = nullptr;
}
