// The purge workers' status in shared memory (its own segment and named LWLock tranche), and
// the function behind the inbox.workers view. See purge_status.hpp.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "pg/shared_memory.hpp"
#include "purge_status.hpp"

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

CycleTotals worker_cycle_ends(Oid database, int64 deleted, int64 batches, bool finished,
                              int interval_ms) {
    TimestampTz now = GetCurrentTimestamp();
    CycleTotals totals = {.start = now, .deleted = deleted, .batches = batches};
    update_slot(database, true, [&](WorkerSlot* slot) {
        if (!slot->cycle_open) {  // the slot was taken over meanwhile: start afresh
            slot->cycle_open = true;
            slot->cycle_start = now;
        }
        slot->cycle_deleted += deleted;
        slot->cycle_batches += batches;
        slot->total_deleted += deleted;
        slot->process_deleted = 0;
        slot->schedule = WorkerSchedule{.continue_now = !finished, .interval_ms = interval_ms};
        totals = {.start = slot->cycle_start,
                  .deleted = slot->cycle_deleted,
                  .batches = slot->cycle_batches};
        if (finished) {
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
    update_slot(database, true, [&](WorkerSlot* slot) {
        strlcpy(slot->last_error, message, sizeof(slot->last_error));
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

extern "C" {

PG_FUNCTION_INFO_V1(inbox_worker_status);
PGDLLEXPORT Datum inbox_worker_status(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    if (status == nullptr) return (Datum)0;

    // Copied under the lock, turned into rows (which allocates) after it.
    WorkerSlot* copy = static_cast<WorkerSlot*>(palloc(sizeof(status->slots)));
    LWLockAcquire(status->lock, LW_SHARED);
    std::memcpy(copy, status->slots, sizeof(status->slots));
    LWLockRelease(status->lock);

    ReturnSetInfo* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (int i = 0; i < max_worker_slots; i++) {
        const WorkerSlot& slot = copy[i];
        if (slot.database == InvalidOid) continue;
        Datum values[8];
        bool nulls[8] = {false,
                         slot.pid == 0,
                         false,
                         slot.last_cycle_start == 0,
                         slot.last_cycle_end == 0,
                         slot.last_cycle_end == 0,
                         false,
                         slot.last_error[0] == '\0'};
        values[0] = ObjectIdGetDatum(slot.database);
        values[1] = Int32GetDatum(slot.pid);
        values[2] = CStringGetTextDatum(state_name(slot.state));
        values[3] = TimestampTzGetDatum(slot.last_cycle_start);
        values[4] = TimestampTzGetDatum(slot.last_cycle_end);
        values[5] = Int64GetDatum(slot.last_cycle_deleted);
        values[6] = Int64GetDatum(slot.total_deleted + slot.process_deleted);
        values[7] = CStringGetTextDatum(slot.last_error);
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return (Datum)0;
}
}
