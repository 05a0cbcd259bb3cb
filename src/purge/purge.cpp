// Deleting expired markers: batch by batch, through SPI only (a partitioned or Citus-distributed
// marker table is purged the same way), and CALL inbox.purge().
//
// A batch walks the consumers in key order and deletes each one's oldest expired markers until
// batch_size rows went: whole buckets at a time, ranges of the retention index (consumer, bucket)
// found and deleted without ctid (which a distributed table does not make unique), and a bucket
// larger than a batch by its rows (purge_bucket_rows.hpp). Every batch takes the database's purge
// lock (a transaction-level advisory lock), so two purges never delete side by side: CALL
// inbox.purge() waits for its turn, a worker that finds the lock taken yields and leaves the work
// to the other.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/spi.hpp"
#include "purge/purge.hpp"
#include "purge/purge_bucket_rows.hpp"
#include "purge/purge_outbox.hpp"
#include "settings.hpp"
#include "store/marker_table.hpp"
#include "store/marker_time.hpp"

namespace {

// The purge lock: advisory locks are per database, so this tag serializes the purges of one
// database. Visible in pg_locks as advisory (classid, objid, objsubid) = (1768841848, 1, 3);
// "inbx" in ASCII. SQL's advisory lock functions only make objsubid 1 or 2, so no session can
// take this lock and hold the purge off.
constexpr uint32 purge_lock_key = 0x696e6278;
constexpr uint32 purge_lock_kind = 1;
constexpr uint16 purge_lock_space = 3;

bool take_purge_lock(bool wait) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, purge_lock_key, purge_lock_kind, purge_lock_space);
    return LockAcquire(&tag, ExclusiveLock, false, !wait) != LOCKACQUIRE_NOT_AVAIL;
}

// ---- the compact layout: consumers by id, each with its own retention -----------------------

// The walk starts at the lowest id the registry holds, whatever it is (the owner may have written
// any): no id stands for "before the first".
MarkerStatement first_registered_consumer = {
    .sql = "SELECT id, retention FROM inbox.consumer_registry ORDER BY id LIMIT 1",
    .nargs = 0,
    .argtypes = {},
    .plan = nullptr};
MarkerStatement next_registered_consumer = {
    .sql =
        "SELECT id, retention FROM inbox.consumer_registry "
        "WHERE id OPERATOR(pg_catalog.>) $1 ORDER BY id LIMIT 1",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};
// A consumer's retention is read again at each batch: an operator may lengthen it during a long
// purge (a replay from the dead-letter queue is coming).
MarkerStatement registered_retention = {
    .sql = "SELECT retention FROM inbox.consumer_registry WHERE id OPERATOR(pg_catalog.=) $1",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// A consumer's expired markers go in ranges [from, to) of whole buckets, oldest first, each
// deleted by one scan of the retention index (consumer, bucket); the last range ends at the
// cutoff's second. A range ends where the (limit + 1)-th marker from its start lies, found from
// the index alone (when its pages are all-visible, as old pages are). Each range starts where the
// last one ended, so no scan walks the index entries of the markers the purge deleted, which stay
// there dead until VACUUM. A bucket that alone holds more markers than a batch goes by its rows
// (purge_bucket_rows.hpp).
MarkerStatement end_bucket = {
    .sql =
        "SELECT time_bucket FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND time_bucket OPERATOR(pg_catalog.>=) $2 AND time_bucket OPERATOR(pg_catalog.<=) $3 "
        "ORDER BY time_bucket OFFSET $4 LIMIT 1",
    .nargs = 4,
    .argtypes = {INT2OID, INT4OID, INT4OID, INT8OID},
    .plan = nullptr};
#define SECOND "(time_bucket, time_offset)"
// The seconds [($2, $3), ($4, $5)), in the buckets $2 to $6 (the index scans exactly those).
#define IN_RANGE                                                                        \
    "consumer_id OPERATOR(pg_catalog.=) $1 AND time_bucket OPERATOR(pg_catalog.>=) $2 " \
    "AND time_bucket OPERATOR(pg_catalog.<=) $6 "                                       \
    "AND " SECOND                                                                       \
    " OPERATOR(pg_catalog.>=) ($2, $3) "                                                \
    "AND " SECOND " OPERATOR(pg_catalog.<) ($4, $5)"
MarkerStatement delete_markers_in_range = {
    .sql = "DELETE FROM inbox.markers WHERE " IN_RANGE,
    .nargs = 6,
    .argtypes = {INT2OID, INT4OID, CHAROID, INT4OID, CHAROID, INT4OID},
    .plan = nullptr};
// What the markers kept beside them (fingerprints, results), which carries their time.
MarkerStatement delete_details_in_range = {
    .sql = "DELETE FROM inbox.marker_details WHERE " IN_RANGE,
    .nargs = 6,
    .argtypes = {INT2OID, INT4OID, CHAROID, INT4OID, CHAROID, INT4OID},
    .plan = nullptr};
#undef IN_RANGE
#undef SECOND

// ---- a database still at 1.0: consumers by name, one retention ------------------------------

MarkerStatement first_consumer_1_0 = {.sql = "SELECT pg_catalog.min(consumer) FROM inbox.messages",
                                      .nargs = 0,
                                      .argtypes = {},
                                      .plan = nullptr};
MarkerStatement next_consumer_1_0 = {
    .sql =
        "SELECT pg_catalog.min(consumer) FROM inbox.messages "
        "WHERE consumer OPERATOR(pg_catalog.>) $1 COLLATE pg_catalog.\"C\"",
    .nargs = 1,
    .argtypes = {TEXTOID},
    .plan = nullptr};
MarkerStatement delete_expired_1_0 = {
    .sql =
        "DELETE FROM inbox.messages "
        "WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\" "
        "AND processed_at OPERATOR(pg_catalog.<) $2 "
        "AND message_id OPERATOR(pg_catalog.=) ANY (ARRAY("
        "SELECT message_id FROM inbox.messages "
        "WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\" "
        "AND processed_at OPERATOR(pg_catalog.<) $2 "
        "ORDER BY processed_at LIMIT $3))",
    .nargs = 3,
    .argtypes = {TEXTOID, TIMESTAMPTZOID, INT8OID},
    .plan = nullptr};

// Where the walk over consumers stands. It lives in memory of the purge's own, which survives
// the commits between batches; in the 1.0 layout the table itself does not limit a consumer's
// length (the owner may have written any), so the name is kept whole.
struct ConsumerCursor {
    MemoryContext context;
    bool started;
    bool positioned;  // the consumer is the one being purged
    int16 consumer_id;
    TimestampTz cutoff;  // the consumer's
    // Compact layout: the consumer's markers before this second are gone (in this purge; a
    // marker stamped earlier by a transaction that commits later waits for the next purge),
    // and those of the bucket being deleted by its rows, when one is.
    inbox::MarkerTime from;
    BucketRows bucket_rows;
    int64 bucket_read_limit;  // how many of such a bucket's rows are read at a time; 0: all
    text* consumer_name;
};

constexpr inbox::MarkerTime earliest_second = {PG_INT32_MIN, 0};

TimestampTz default_cutoff(TimestampTz now) {
    return now - (TimestampTz)purge_retention_s * USECS_PER_SEC;
}

bool first_row_value(int column, Datum* value) {
    bool isnull = true;
    if (SPI_processed > 0)
        *value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, column, &isnull);
    return !isnull;
}

// The cutoff of a consumer whose retention is in column `column` of the last statement's first
// row (NULL: inbox.retention).
TimestampTz registered_cutoff(const PurgeRun* run, int column) {
    Datum retention = 0;
    if (!first_row_value(column, &retention)) return default_cutoff(run->now);
    return DatumGetTimestampTz(
        DirectFunctionCall2(timestamptz_mi_interval, TimestampTzGetDatum(run->now), retention));
}

// Moves to the next consumer; false when there is none.
bool advance_consumer(ConsumerCursor* cursor, const PurgeRun* run) {
    Datum value = 0;
    if (marker_store()->layout == MarkerLayout::compact) {
        Datum after = Int16GetDatum(cursor->consumer_id);
        execute_as_store_owner(
            cursor->started ? &next_registered_consumer : &first_registered_consumer, &after);
        if (!first_row_value(1, &value)) return false;
        cursor->consumer_id = DatumGetInt16(value);
        cursor->cutoff = registered_cutoff(run, 2);
        cursor->from = earliest_second;
    } else {
        Datum after = PointerGetDatum(cursor->consumer_name);
        execute_as_store_owner(cursor->started ? &next_consumer_1_0 : &first_consumer_1_0, &after);
        if (!first_row_value(1, &value)) return false;
        text* previous = cursor->consumer_name;
        cursor->consumer_name = static_cast<text*>(
            MemoryContextAlloc(cursor->context, VARSIZE_ANY(DatumGetPointer(value))));
        memcpy(cursor->consumer_name, DatumGetPointer(value), VARSIZE_ANY(DatumGetPointer(value)));
        if (previous != nullptr) pfree(previous);
        cursor->cutoff = default_cutoff(run->now);
    }
    cursor->started = true;
    cursor->positioned = true;
    return true;
}

// At the start of a batch, the retention of the consumer the last batch left off at, as the
// registry says now: the cutoff moves (from the same `now`) when it changed. The walk carries on
// from where it stands, so what is deleted stays deleted and nothing from the new cutoff's second
// on is deleted: a bucket being deleted by its rows is read again up to the new cutoff.
void follow_retention(ConsumerCursor* cursor, const PurgeRun* run) {
    if (!cursor->positioned || marker_store()->layout != MarkerLayout::compact) return;
    Datum consumer = Int16GetDatum(cursor->consumer_id);
    execute_as_store_owner(&registered_retention, &consumer);
    if (SPI_processed == 0) {
        // No longer registered: the walk goes on with the next consumer.
        close_bucket_rows(&cursor->bucket_rows);
        cursor->positioned = false;
        return;
    }
    TimestampTz cutoff = registered_cutoff(run, 1);
    inbox::MarkerTime kept = inbox::first_kept(cutoff);
    inbox::MarkerTime was_kept = inbox::first_kept(cursor->cutoff);
    cursor->cutoff = cutoff;
    if (kept.bucket != was_kept.bucket || kept.offset != was_kept.offset)
        close_bucket_rows(&cursor->bucket_rows);
}

// What a step of the purge left: the consumer's expired markers are all gone, or some are left,
// or the batch should end here (its room would take only part of a bucket).
enum class Step { consumer_done, more, batch_full };

Datum second_datum(std::uint8_t offset) {
    return CharGetDatum(static_cast<char>(offset));
}

bool before(inbox::MarkerTime a, inbox::MarkerTime b) {
    return inbox::expired(a, b);
}

// Deletes up to `limit` of the next rows of the bucket being deleted by its rows; once none is
// left, the consumer's walk goes on after that bucket.
Step delete_by_bucket_rows(ConsumerCursor* cursor, inbox::MarkerTime kept, int64 limit,
                           int64* deleted) {
    if (!delete_next_bucket_rows(&cursor->bucket_rows, limit, deleted)) return Step::more;
    int32 bucket = cursor->bucket_rows.bucket;
    close_bucket_rows(&cursor->bucket_rows);
    cursor->from = bucket == kept.bucket ? kept : inbox::MarkerTime{bucket + 1, 0};
    return Step::more;
}

// Deletes up to `limit` expired markers of the cursor's consumer, oldest first, with the details
// kept beside them, and counts them in *deleted. A bucket that holds more markers than `limit` is
// deleted by its rows only when the batch is empty (`batch_started` false), so that a bucket that
// fits in a whole batch goes in one range.
Step delete_expired_compact(ConsumerCursor* cursor, int64 limit, bool batch_started,
                            int64* deleted) {
    inbox::MarkerTime kept = inbox::first_kept(cursor->cutoff);
    *deleted = 0;
    if (cursor->bucket_rows.context != nullptr)
        return delete_by_bucket_rows(cursor, kept, limit, deleted);
    inbox::MarkerTime from = cursor->from;
    if (!before(from, kept)) return Step::consumer_done;
    inbox::MarkerTime to = kept;
    Step step = Step::more;
    Datum consumer = Int16GetDatum(cursor->consumer_id);
    Datum buckets[4] = {consumer, Int32GetDatum(from.bucket), Int32GetDatum(kept.bucket),
                        Int64GetDatum(limit)};
    execute_as_store_owner(&end_bucket, buckets);
    Datum value = 0;
    if (!first_row_value(1, &value)) {
        step = Step::consumer_done;
    } else if (DatumGetInt32(value) > from.bucket) {
        to = {DatumGetInt32(value), 0};
    } else {
        // `from` starts a bucket (or is the cutoff's bucket), and this one holds more than the
        // room left: its expired markers, up to the second before the cutoff in its last bucket.
        if (batch_started) return Step::batch_full;
        std::uint8_t last_offset =
            from.bucket == kept.bucket ? static_cast<std::uint8_t>(kept.offset - 1) : 255;
        open_bucket_rows(&cursor->bucket_rows, cursor->context, cursor->consumer_id, from.bucket,
                         last_offset, cursor->bucket_read_limit);
        return delete_by_bucket_rows(cursor, kept, limit, deleted);
    }
    int32 last_bucket = to.offset == 0 ? to.bucket - 1 : to.bucket;
    Datum range[6] = {consumer,
                      Int32GetDatum(from.bucket),
                      second_datum(from.offset),
                      Int32GetDatum(to.bucket),
                      second_datum(to.offset),
                      Int32GetDatum(last_bucket)};
    execute_as_store_owner(&delete_markers_in_range, range);
    *deleted = static_cast<int64>(SPI_processed);
    execute_as_store_owner(&delete_details_in_range, range);
    cursor->from = to;
    return step;
}

// A database still at 1.0: up to `limit` of the consumer's expired markers, oldest first.
Step delete_expired_by_name(const ConsumerCursor* cursor, int64 limit, int64* deleted) {
    Datum values[3] = {PointerGetDatum(cursor->consumer_name), TimestampTzGetDatum(cursor->cutoff),
                       Int64GetDatum(limit)};
    execute_as_store_owner(&delete_expired_1_0, values);
    *deleted = static_cast<int64>(SPI_processed);
    return *deleted == limit ? Step::more : Step::consumer_done;
}

// A purge that stops at a deadline (a worker's run) reads a burst's rows a few batches at a
// time, so that each run reads only about what it deletes rather than all that is left of the
// burst; the next read skips the index entries of the rows deleted meanwhile, which the first
// scan past them after their commit marked dead. In one transaction (CALL inbox.purge()) those
// entries stay live to every scan: one read of the whole bucket.
constexpr int64 batches_per_bucket_read = 16;

int64 bucket_read_limit(const PurgeRun* run) {
    return run->deadline != 0 ? batches_per_bucket_read * run->batch_size : 0;
}

bool past(TimestampTz deadline) {
    return deadline != 0 && GetCurrentTimestamp() >= deadline;
}

enum class BatchEnd { full, exhausted, out_of_time };

// What a batch deleted.
struct BatchCounts {
    int64 markers;
    int64 messages;
};

// The room the markers left in a batch, for delivered outgoing messages past their retention.
BatchEnd purge_delivered_messages(OutboxCursor* outbox, const PurgeRun* run, int64 room,
                                  int64* deleted) {
    *deleted = 0;
    if (room <= 0) return BatchEnd::full;
    if (past(run->deadline)) return BatchEnd::out_of_time;
    if (!lock_outbox_for_purge()) return BatchEnd::exhausted;
    TimestampTz cutoff = run->now - (TimestampTz)outbox_retention_s * USECS_PER_SEC;
    *deleted = delete_delivered_messages(outbox, cutoff, room);
    return *deleted == room ? BatchEnd::full : BatchEnd::exhausted;
}

// One batch: up to batch_size markers across consumers, then delivered outgoing messages, in
// the current transaction, stopping early at the deadline (a walk over many consumers with
// nothing to delete counts too).
BatchEnd purge_one_batch(ConsumerCursor* cursor, OutboxCursor* outbox, const PurgeRun* run,
                         BatchCounts* counts) {
    BatchEnd end = BatchEnd::full;
    int64* deleted = &counts->markers;
    *counts = {0, 0};
    PushActiveSnapshot(GetTransactionSnapshot());
    pg::spi_connect();
    follow_retention(cursor, run);
    while (*deleted < run->batch_size) {
        if (past(run->deadline)) {
            end = BatchEnd::out_of_time;
            break;
        }
        if (!cursor->positioned && !advance_consumer(cursor, run)) {
            end = BatchEnd::exhausted;
            break;
        }
        int64 limit = run->batch_size - *deleted;
        int64 removed = 0;
        Step step = marker_store()->layout == MarkerLayout::compact
                        ? delete_expired_compact(cursor, limit, *deleted > 0, &removed)
                        : delete_expired_by_name(cursor, limit, &removed);
        *deleted += removed;
        if (step == Step::consumer_done) cursor->positioned = false;
        if (step == Step::batch_full) break;
    }
    if (end == BatchEnd::exhausted)
        end = purge_delivered_messages(outbox, run, run->batch_size - *deleted, &counts->messages);

    SPI_finish();
    PopActiveSnapshot();
    return end;
}

// The pause after a batch: as long as the batch took (bounded), so that the purge takes at most
// about half of one core and of the I/O it competes for with live traffic.
long pause_after_batch_ms(TimestampTz batch_start) {
    long ms = TimestampDifferenceMilliseconds(batch_start, GetCurrentTimestamp());
    return Max(10, Min(ms, 1000));
}

void pause_between_batches(long ms) {
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
                    PG_WAIT_EXTENSION);
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
}

}  // namespace

PurgeProgress purge_expired_markers(const PurgeRun* run) {
    PurgeProgress progress = {
        .deleted = 0, .batches = 0, .outcome = PurgeOutcome::finished, .messages_deleted = 0};
    OutboxCursor outbox = outbox_cursor_start();
    ConsumerCursor cursor = {.context = AllocSetContextCreate(
                                 TopMemoryContext, "inbox purge cursor", ALLOCSET_SMALL_SIZES),
                             .started = false,
                             .positioned = false,
                             .consumer_id = 0,
                             .cutoff = 0,
                             .from = earliest_second,
                             .bucket_rows = {},
                             .bucket_read_limit = bucket_read_limit(run),
                             .consumer_name = nullptr};
    PG_TRY();
    {
        for (;;) {
            if (!take_purge_lock(run->wait_for_turn)) {
                progress.outcome = PurgeOutcome::busy;
                break;
            }
            // Before any statement: a concurrent DROP EXTENSION either waits for this batch or
            // has committed, never fails it half-way.
            if (!lock_store_for_purge()) {
                progress.outcome = PurgeOutcome::extension_gone;
                break;
            }
            TimestampTz batch_start = GetCurrentTimestamp();
            BatchCounts deleted = {0, 0};
            BatchEnd end = purge_one_batch(&cursor, &outbox, run, &deleted);
            progress.deleted += deleted.markers;
            progress.messages_deleted += deleted.messages;
            if (deleted.markers > 0 || deleted.messages > 0) progress.batches++;
            if (run->after_batch != nullptr) run->after_batch(&progress);
            if (end == BatchEnd::exhausted) break;
            if (end == BatchEnd::out_of_time || past(run->deadline)) {
                progress.outcome = PurgeOutcome::out_of_time;
                break;
            }
            if (run->commit != nullptr) {
                run->commit();
                pause_between_batches(pause_after_batch_ms(batch_start));
            }
        }
    }
    PG_FINALLY();
    {
        close_bucket_rows(&cursor.bucket_rows);
        MemoryContextDelete(cursor.context);
    }
    PG_END_TRY();
    return progress;
}

bool purges_here() {
    return marker_store()->distribution != StoreDistribution::citus_worker_node;
}

const char* purge_outcome_name(PurgeOutcome outcome) {
    switch (outcome) {
        case PurgeOutcome::finished:
            return "finished";
        case PurgeOutcome::busy:
            return "yielded to another purge";
        case PurgeOutcome::out_of_time:
            return "out of time";
        case PurgeOutcome::extension_gone:
            return "extension dropped";
    }
    return "unknown";
}

void log_purge(const char* purger, const char* database, const PurgeProgress& progress,
               TimestampTz start) {
    ereport(purge_log_level,
            (errmsg("%s of database \"%s\" deleted %lld expired %s in %lld %s in %ld ms (%s)",
                    purger, database, static_cast<long long>(progress.deleted),
                    progress.deleted == 1 ? "marker" : "markers",
                    static_cast<long long>(progress.batches),
                    progress.batches == 1 ? "batch" : "batches",
                    TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()),
                    purge_outcome_name(progress.outcome))));
}

void log_outbox_purge(const char* purger, const char* database, int64 deleted) {
    if (deleted == 0) return;
    ereport(purge_log_level,
            (errmsg("%s of database \"%s\" deleted %lld delivered outgoing %s", purger, database,
                    static_cast<long long>(deleted), deleted == 1 ? "message" : "messages")));
}

namespace {

void commit_procedure_batch() {
    SPI_commit();
}

// CALL inbox.purge() outside a transaction block is non-atomic: it may commit.
bool called_nonatomic(FunctionCallInfo fcinfo) {
    return fcinfo->context != nullptr && IsA(fcinfo->context, CallContext) &&
           !castNode(CallContext, fcinfo->context)->atomic;
}

// A job of pg_cron, which records only "1 row" (or "CALL") of the purge in
// cron.job_run_details: the count goes to the server log. pg_cron names its connections
// "pg_cron", and its background workers too (cron.use_background_workers).
bool running_as_pg_cron_job() {
    constexpr const char* pg_cron = "pg_cron";
    if (MyBgworkerEntry != nullptr) return strcmp(MyBgworkerEntry->bgw_type, pg_cron) == 0;
    return application_name != nullptr && strcmp(application_name, pg_cron) == 0;
}

// A retention set for a role (ALTER ROLE ... SET) decides what this role's purge deletes for
// every consumer of the database, while the workers keep the database's: said aloud.
void warn_about_role_retention() {
    if (!retention_set_for_role()) return;
    ereport(
        WARNING,
        (errmsg("inbox.purge() deletes the markers older than inbox.retention = '%s', the value "
                "set for role \"%s\"",
                GetConfigOption("inbox.retention", false, false),
                GetUserNameFromId(GetSessionUserId(), false)),
         errdetail("It applies to every consumer of the database; the purge workers use the "
                   "database's inbox.retention."),
         errhint("Give a consumer its own window with inbox.configure_consumer, or the "
                 "database its own with ALTER DATABASE ... SET inbox.retention, and ALTER "
                 "ROLE ... RESET inbox.retention.")));
}

}  // namespace

extern "C" {

// CALL inbox.purge(): the INOUT argument carries the number of markers deleted back.
PG_FUNCTION_INFO_V1(inbox_purge);
PGDLLEXPORT Datum inbox_purge(PG_FUNCTION_ARGS) {
    if (!purges_here())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the markers of this database are distributed with Citus and "
                               "purged by its coordinator"),
                        errhint("CALL inbox.purge() on the coordinator.")));
    bool nonatomic = called_nonatomic(fcinfo);
    warn_about_role_retention();
    TimestampTz start = GetCurrentTimestamp();
    PurgeRun run = {.now = GetCurrentTransactionStartTimestamp(),
                    .batch_size = purge_batch_size,
                    .wait_for_turn = true,
                    .commit = nullptr,
                    .deadline = 0,
                    .after_batch = nullptr};
    if (nonatomic) {
        pg::spi_connect_nonatomic();
        run.commit = commit_procedure_batch;
    }
    PurgeProgress progress = purge_expired_markers(&run);
    if (nonatomic) SPI_finish();

    if (progress.outcome == PurgeOutcome::extension_gone)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table inbox.messages is missing")));
    if (running_as_pg_cron_job()) {
        constexpr const char* purger = "CALL inbox.purge() run by pg_cron";
        log_purge(purger, get_database_name(MyDatabaseId), progress, start);
        log_outbox_purge(purger, get_database_name(MyDatabaseId), progress.messages_deleted);
    }

    // Built after the last commit, in the memory of the CALL, which outlives its transactions.
    TupleDesc result_type;
    if (get_call_result_type(fcinfo, nullptr, &result_type) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "inbox.purge must have an INOUT bigint parameter");
    Datum value = Int64GetDatum(progress.deleted);
    bool isnull = false;
    return HeapTupleGetDatum(heap_form_tuple(result_type, &value, &isnull));
}
}
