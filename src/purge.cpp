// Deleting expired markers: batch by batch, through SPI only (a partitioned or Citus-distributed
// marker table is purged the same way), and CALL inbox.purge().
//
// A batch walks the consumers in key order and deletes each one's oldest expired markers, found
// through the (consumer, processed_at) index, by primary key, until batch_size rows went. Every
// batch takes the database's purge lock (a transaction-level advisory lock), so two purges never
// delete side by side: CALL inbox.purge() waits for its turn, a worker that finds the lock taken
// yields and leaves the work to the other.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include <cstring>

#include "marker_table.hpp"
#include "pg/spi.hpp"
#include "purge.hpp"
#include "settings.hpp"

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

// Locks the marker table for the batch, or reports that the extension is gone. Taking the lock
// before any statement means a concurrent DROP EXTENSION either waits for this batch or has
// committed, never fails it half-way.
bool lock_marker_table() {
    return OidIsValid(find_marker_table(RowExclusiveLock));
}

// The first consumer in key order, and the first after $1: one descent of an index on consumer.
MarkerStatement first_consumer = {.sql = "SELECT pg_catalog.min(consumer) FROM inbox.messages",
                                  .nargs = 0,
                                  .argtypes = {},
                                  .plan = nullptr};
MarkerStatement next_consumer = {
    .sql =
        "SELECT pg_catalog.min(consumer) FROM inbox.messages "
        "WHERE consumer OPERATOR(pg_catalog.>) $1 COLLATE pg_catalog.\"C\"",
    .nargs = 1,
    .argtypes = {TEXTOID},
    .plan = nullptr};

// Up to $3 of consumer $1's markers processed before $2, oldest first, deleted by primary key.
// processed_at is checked again on the row that is deleted, in case it changed meanwhile.
MarkerStatement delete_expired = {
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

// Where the walk over consumers stands. The table itself does not limit a consumer's length
// (the owner may have written any), so the name is kept whole, in memory of the purge's own that
// survives the commits between batches.
struct ConsumerCursor {
    MemoryContext context;
    text* consumer;   // nullptr before the first consumer
    bool positioned;  // consumer is the one being purged
};

// Moves to the next consumer; false when there is none.
bool advance_consumer(ConsumerCursor* cursor) {
    Datum after = PointerGetDatum(cursor->consumer);
    execute_as_marker_owner(cursor->consumer == nullptr ? &first_consumer : &next_consumer, &after);
    bool isnull = true;
    Datum next = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (isnull) return false;
    text* previous = cursor->consumer;
    cursor->consumer =
        static_cast<text*>(MemoryContextAlloc(cursor->context, VARSIZE_ANY(DatumGetPointer(next))));
    memcpy(cursor->consumer, DatumGetPointer(next), VARSIZE_ANY(DatumGetPointer(next)));
    if (previous != nullptr) pfree(previous);
    cursor->positioned = true;
    return true;
}

bool past(TimestampTz deadline) {
    return deadline != 0 && GetCurrentTimestamp() >= deadline;
}

enum class BatchEnd { full, exhausted, out_of_time };

// One batch: up to batch_size markers across consumers, in the current transaction, stopping
// early at the deadline (a walk over many consumers with nothing to delete counts too).
BatchEnd purge_one_batch(ConsumerCursor* cursor, const PurgeRun* run, int64* deleted) {
    BatchEnd end = BatchEnd::full;
    *deleted = 0;
    PushActiveSnapshot(GetTransactionSnapshot());
    pg::spi_connect();
    while (*deleted < run->batch_size) {
        if (past(run->deadline)) {
            end = BatchEnd::out_of_time;
            break;
        }
        if (!cursor->positioned && !advance_consumer(cursor)) {
            end = BatchEnd::exhausted;
            break;
        }
        int64 limit = run->batch_size - *deleted;
        Datum values[3] = {PointerGetDatum(cursor->consumer), TimestampTzGetDatum(run->cutoff),
                           Int64GetDatum(limit)};
        execute_as_marker_owner(&delete_expired, values);
        *deleted += static_cast<int64>(SPI_processed);
        if (static_cast<int64>(SPI_processed) < limit) cursor->positioned = false;  // consumer done
    }
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

TimestampTz purge_cutoff_now() {
    return GetCurrentTransactionStartTimestamp() - (TimestampTz)purge_retention_s * USECS_PER_SEC;
}

PurgeProgress purge_expired_markers(const PurgeRun* run) {
    PurgeProgress progress = {0, 0, PurgeOutcome::finished};
    ConsumerCursor cursor = {
        AllocSetContextCreate(TopMemoryContext, "inbox purge cursor", ALLOCSET_SMALL_SIZES),
        nullptr, false};
    PG_TRY();
    {
        for (;;) {
            if (!take_purge_lock(run->wait_for_turn)) {
                progress.outcome = PurgeOutcome::busy;
                break;
            }
            if (!lock_marker_table()) {
                progress.outcome = PurgeOutcome::extension_gone;
                break;
            }
            TimestampTz batch_start = GetCurrentTimestamp();
            int64 deleted = 0;
            BatchEnd end = purge_one_batch(&cursor, run, &deleted);
            progress.deleted += deleted;
            if (deleted > 0) progress.batches++;
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
    { MemoryContextDelete(cursor.context); }
    PG_END_TRY();
    return progress;
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

namespace {

void commit_procedure_batch() {
    SPI_commit();
}

// CALL inbox.purge() outside a transaction block is non-atomic: it may commit.
bool called_nonatomic(FunctionCallInfo fcinfo) {
    return fcinfo->context != nullptr && IsA(fcinfo->context, CallContext) &&
           !castNode(CallContext, fcinfo->context)->atomic;
}

}  // namespace

extern "C" {

// CALL inbox.purge(): the INOUT argument carries the number of markers deleted back.
PG_FUNCTION_INFO_V1(inbox_purge);
PGDLLEXPORT Datum inbox_purge(PG_FUNCTION_ARGS) {
    bool nonatomic = called_nonatomic(fcinfo);
    PurgeRun run = {.cutoff = purge_cutoff_now(),
                    .batch_size = purge_batch_size,
                    .wait_for_turn = true,
                    .commit = nullptr,
                    .deadline = 0,
                    .after_batch = nullptr};
    if (nonatomic) {
        if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
            elog(ERROR, "SPI_connect_ext failed");
        run.commit = commit_procedure_batch;
    }
    PurgeProgress progress = purge_expired_markers(&run);
    if (nonatomic) SPI_finish();

    if (progress.outcome == PurgeOutcome::extension_gone)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table inbox.messages is missing")));

    // Built after the last commit, in the memory of the CALL, which outlives its transactions.
    TupleDesc result_type;
    if (get_call_result_type(fcinfo, nullptr, &result_type) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "inbox.purge must have an INOUT bigint parameter");
    Datum value = Int64GetDatum(progress.deleted);
    bool isnull = false;
    return HeapTupleGetDatum(heap_form_tuple(result_type, &value, &isnull));
}
}
