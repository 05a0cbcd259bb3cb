// The purge workers' status in shared memory (its own segment and named LWLock tranche), and
// the function behind the inbox.workers view. See purge_status.hpp.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/shared_memory.hpp"
#include "purge/purge_status.hpp"

namespace {

// The segment and its LWLock tranche.
constexpr const char* segment_name = "inbox_purge_workers";
// Databases with the extension whose workers can report at once; beyond it they still purge.
constexpr int max_worker_slots = 512;

enum class WorkerState : int { idle, purging, standby, off };

struct WorkerSlot {
    Oid database;  // InvalidOid: free
    pid_t pid;     // the worker process now serving the database, 0 when none
    WorkerState state;
    TimestampTz last_cycle_start;
    TimestampTz last_cycle_end;
    int64 last_cycle_deleted;
    int64 total_deleted;
    char last_error[256];
    TimestampTz last_error_at;
    // Since when every worker process found the purge lock taken and gave way; 0 when the last
    // one got it.
    TimestampTz blocked_since;
    // A cycle runs over several worker processes when it has more to delete than one process
    // may take time for (so that none holds its database for long).
    bool cycle_open;
    TimestampTz cycle_start;
    int64 cycle_deleted;
    int64 cycle_batches;
    int64 process_deleted;  // deleted by the running process so far, not yet in cycle_deleted
    WorkerSchedule schedule;
};

struct WorkerStatus {
    LWLock* lock;
    WorkerSlot slots[max_worker_slots];
};

WorkerStatus* status = nullptr;

Size segment_size() {
    return sizeof(WorkerStatus);
}

void attach_segment() {
    bool found = false;
    status =
        static_cast<WorkerStatus*>(ShmemInitStruct(segment_name, sizeof(WorkerStatus), &found));
    if (!found) {
        std::memset(status, 0, sizeof(WorkerStatus));
        status->lock = &(GetNamedLWLockTranche(segment_name))->lock;
    }
}

constexpr pg::SharedSegment segment = {.name = segment_name,
                                       .size = segment_size,
                                       .lwlocks = 1,
                                       .attach = attach_segment,
                                       .restore = nullptr,
                                       .save = nullptr};

// Callers hold the lock.
WorkerSlot* find_slot(Oid database) {
    for (WorkerSlot& slot : status->slots)
        if (slot.database == database) return &slot;
    return nullptr;
}

WorkerSlot* find_or_create_slot(Oid database) {
    WorkerSlot* slot = find_slot(database);
    if (slot != nullptr) return slot;
    slot = find_slot(InvalidOid);
    if (slot == nullptr) return nullptr;
    std::memset(slot, 0, sizeof(WorkerSlot));
    slot->database = database;
    return slot;
}

const char* state_name(WorkerState state) {
    switch (state) {
        case WorkerState::idle:
            return "idle";
        case WorkerState::purging:
            return "purging";
        case WorkerState::standby:
            return "standby";
        case WorkerState::off:
            return "off";
    }
    return "unknown";
}

// Runs `update` on the database's slot under the exclusive lock; nothing without shared memory
// or a slot. Updates only copy plain values: nothing in them can raise an error.
template <typename Update>
void update_slot(Oid database, bool create, Update update) {
    if (status == nullptr) return;
    LWLockAcquire(status->lock, LW_EXCLUSIVE);
    WorkerSlot* slot = create ? find_or_create_slot(database) : find_slot(database);
    if (slot != nullptr) update(slot);
    LWLockRelease(status->lock);
}

}  // namespace

void request_purge_status_memory() {
    pg::request_shared_segment(&segment);
}

void worker_starts(Oid database, bool standby, bool enabled) {
    update_slot(database, true, [&](WorkerSlot* slot) {
        slot->pid = MyProcPid;
        slot->state = standby   ? WorkerState::standby
                      : enabled ? WorkerState::idle
                                : WorkerState::off;
        slot->process_deleted = 0;
    });
}

void workers_turned_off() {
    if (status == nullptr) return;
    LWLockAcquire(status->lock, LW_EXCLUSIVE);
    for (WorkerSlot& slot : status->slots)
        if (slot.database != InvalidOid && slot.state != WorkerState::standby)
            slot.state = WorkerState::off;
    LWLockRelease(status->lock);
}

void worker_cycle_begins(Oid database) {
    TimestampTz now = GetCurrentTimestamp();
    update_slot(database, false, [&](WorkerSlot* slot) {
        slot->state = WorkerState::purging;
        if (!slot->cycle_open) {
            slot->cycle_open = true;
            slot->cycle_start = now;
            slot->cycle_deleted = 0;
            slot->cycle_batches = 0;
        }
    });
}

void worker_cycle_progress(Oid database, int64 deleted) {
    update_slot(database, false, [&](WorkerSlot* slot) { slot->process_deleted = deleted; });
}

CycleTotals worker_cycle_ends(Oid database, const PurgeProgress& progress, int interval_ms) {
    TimestampTz now = GetCurrentTimestamp();
    bool gave_way = progress.outcome == PurgeOutcome::busy;
    bool out_of_time = progress.outcome == PurgeOutcome::out_of_time;
    CycleTotals totals = {.start = now,
                          .deleted = progress.deleted,
                          .batches = progress.batches,
                          .complete = !gave_way && !out_of_time};
    update_slot(database, true, [&](WorkerSlot* slot) {
        if (!slot->cycle_open) {  // the slot was taken over meanwhile: start afresh
            slot->cycle_open = true;
            slot->cycle_start = now;
        }
        slot->cycle_deleted += progress.deleted;
        slot->cycle_batches += progress.batches;
        slot->total_deleted += progress.deleted;
        slot->process_deleted = 0;
        slot->schedule = WorkerSchedule{.continue_now = out_of_time, .interval_ms = interval_ms};
        if (!gave_way)
            slot->blocked_since = 0;
        else if (slot->blocked_since == 0)
            slot->blocked_since = now;
        totals.start = slot->cycle_start;
        totals.deleted = slot->cycle_deleted;
        totals.batches = slot->cycle_batches;
        if (totals.complete) {
            slot->cycle_open = false;
            slot->last_cycle_start = slot->cycle_start;
            slot->last_cycle_end = now;
            slot->last_cycle_deleted = slot->cycle_deleted;
        }
    });
    return totals;
}

void worker_exits(Oid database) {
    update_slot(database, false, [&](WorkerSlot* slot) {
        if (slot->pid != MyProcPid) return;
        slot->pid = 0;
        if (slot->state == WorkerState::purging) slot->state = WorkerState::idle;
    });
}

void worker_failed(Oid database, const char* message) {
    TimestampTz now = GetCurrentTimestamp();
    update_slot(database, true, [&](WorkerSlot* slot) {
        strlcpy(slot->last_error, message, sizeof(slot->last_error));
        slot->last_error_at = now;
    });
}

void forget_worker(Oid database) {
    update_slot(database, false, [](WorkerSlot* slot) { slot->database = InvalidOid; });
}

void forget_workers_except(const Oid* databases, int count) {
    if (status == nullptr) return;
    LWLockAcquire(status->lock, LW_EXCLUSIVE);
    for (WorkerSlot& slot : status->slots) {
        if (slot.database == InvalidOid) continue;
        bool live = false;
        for (int i = 0; i < count && !live; i++) live = databases[i] == slot.database;
        if (!live) slot.database = InvalidOid;
    }
    LWLockRelease(status->lock);
}

WorkerSchedule worker_schedule(Oid database) {
    WorkerSchedule schedule = {.continue_now = false, .interval_ms = 0};
    if (status == nullptr) return schedule;
    LWLockAcquire(status->lock, LW_SHARED);
    WorkerSlot* slot = find_slot(database);
    if (slot != nullptr) schedule = slot->schedule;
    LWLockRelease(status->lock);
    return schedule;
}

namespace {

// The columns of inbox.worker_status() (1.0, 1.1), and those 1.2 adds after them.
constexpr int columns_1_1 = 8;
constexpr int columns_1_2 = 10;

// One row per database, in the columns of the caller's version (checked against its SQL).
void emit_worker_rows(FunctionCallInfo fcinfo, int columns) {
    InitMaterializedSRF(fcinfo, 0);
    if (status == nullptr) return;

    // Copied under the lock, turned into rows (which allocates) after it.
    WorkerSlot* copy = static_cast<WorkerSlot*>(palloc(sizeof(status->slots)));
    LWLockAcquire(status->lock, LW_SHARED);
    std::memcpy(copy, status->slots, sizeof(status->slots));
    LWLockRelease(status->lock);

    ReturnSetInfo* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (result->setDesc->natts != columns)
        elog(ERROR, "inbox.worker_status: %d result columns declared, %d expected",
             result->setDesc->natts, columns);
    for (int i = 0; i < max_worker_slots; i++) {
        const WorkerSlot& slot = copy[i];
        if (slot.database == InvalidOid) continue;
        Datum values[columns_1_2];
        bool nulls[columns_1_2] = {false,
                                   slot.pid == 0,
                                   false,
                                   slot.last_cycle_start == 0,
                                   slot.last_cycle_end == 0,
                                   slot.last_cycle_end == 0,
                                   false,
                                   slot.last_error[0] == '\0',
                                   slot.blocked_since == 0,
                                   slot.last_error_at == 0};
        values[0] = ObjectIdGetDatum(slot.database);
        values[1] = Int32GetDatum(slot.pid);
        values[2] = CStringGetTextDatum(state_name(slot.state));
        values[3] = TimestampTzGetDatum(slot.last_cycle_start);
        values[4] = TimestampTzGetDatum(slot.last_cycle_end);
        values[5] = Int64GetDatum(slot.last_cycle_deleted);
        values[6] = Int64GetDatum(slot.total_deleted + slot.process_deleted);
        values[7] = CStringGetTextDatum(slot.last_error);
        values[8] = TimestampTzGetDatum(slot.blocked_since);
        values[9] = TimestampTzGetDatum(slot.last_error_at);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
}

// Who may read the workers' status is decided in one place: the EXECUTE privilege on
// inbox.worker_status(), which the grants of 1.0 and 1.1 and grant_access(..., 'monitor') give.
// inbox.worker_status_1_2(), which the view calls from 1.2 on, is executable by PUBLIC and asks
// for that privilege itself: a grant made before the update (or restored by pg_dump, which does
// not dump grants an update script made) still serves the view.
void check_worker_status_privilege() {
    List* name = list_make2(makeString(pstrdup("inbox")), makeString(pstrdup("worker_status")));
    Oid function = LookupFuncName(name, 0, nullptr, false);
    if (pg::object_privilege(ProcedureRelationId, function, GetUserId(), ACL_EXECUTE) !=
        ACLCHECK_OK)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to read the status of the purge workers"),
                        errdetail("Reading it takes EXECUTE on inbox.worker_status()."),
                        errhint("GRANT EXECUTE ON FUNCTION inbox.worker_status() to the role, or "
                                "SELECT inbox.grant_access(role, 'monitor').")));
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_worker_status);
PGDLLEXPORT Datum inbox_worker_status(PG_FUNCTION_ARGS) {
    emit_worker_rows(fcinfo, columns_1_1);
    return (Datum)0;
}

// 1.2: also blocked_since and last_error_at.
PG_FUNCTION_INFO_V1(inbox_worker_status_1_2);
PGDLLEXPORT Datum inbox_worker_status_1_2(PG_FUNCTION_ARGS) {
    check_worker_status_privilege();
    emit_worker_rows(fcinfo, columns_1_2);
    return (Datum)0;
}
}
