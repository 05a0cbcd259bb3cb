// What the purge workers report about themselves, in shared memory: the rows of inbox.workers.
// One slot per database in which a worker found the extension. Exists only when the library is
// preloaded; without it every call here does nothing and inbox.workers is empty.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "purge/purge.hpp"

// Asks for the segment and its lock; from _PG_init, while shared_preload_libraries is processed.
void request_purge_status_memory();

// A worker process starts serving `database` (which has the extension): idle; standby when the
// server is in recovery; off when inbox.purge_worker is off for the database, which it then
// leaves to CALL inbox.purge() or a schedule. Creates the database's slot on first use.
void worker_starts(Oid database, bool standby, bool enabled);
// inbox.purge_worker is off for the whole server: no worker runs, every database shows off.
void workers_turned_off();
// The worker begins (or, after its predecessor ran out of time, continues) a purge cycle.
void worker_cycle_begins(Oid database);
// Markers deleted so far in this worker process's part of the cycle.
void worker_cycle_progress(Oid database, int64 deleted);

struct CycleTotals {
    TimestampTz start;
    int64 deleted;
    int64 batches;
    bool complete;
};
// The worker process ends its part of the cycle, having purged as `progress` says. The cycle is
// complete when the purge reached the end of the expired markers (its totals are returned, to be
// logged). Out of time, it continues in the next worker process, which the launcher starts at
// once. A worker that gave way to another purge holding the purge lock leaves the cycle open
// for the next interval's worker, and the database shows as blocked since the first of them.
// `interval_ms` is the database's own inbox.purge_interval (ALTER DATABASE ... SET), 0 when it
// follows the server-wide value.
CycleTotals worker_cycle_ends(Oid database, const PurgeProgress& progress, int interval_ms);
// The worker process exits, normally or not: no pid, not purging.
void worker_exits(Oid database);
void worker_failed(Oid database, const char* message);

// The database has no extension (any more), or is gone: its slot is freed.
void forget_worker(Oid database);
// Frees the slots of every database not in `databases`.
void forget_workers_except(const Oid* databases, int count);
// What the last worker of `database` said about the next one: due at once (its cycle goes on),
// and the database's own interval (0: the server-wide inbox.purge_interval).
struct WorkerSchedule {
    bool continue_now;
    int interval_ms;
};
WorkerSchedule worker_schedule(Oid database);
