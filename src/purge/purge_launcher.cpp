// The purge launcher. It connects to no database (it reads only the shared catalog
// pg_database, so it never stands in the way of DROP DATABASE) and starts, every
// inbox.purge_interval, one short-lived worker per database that allows connections and is not
// a template (purge_worker.cpp). So CREATE/DROP EXTENSION and new or dropped databases need no
// configuration, and per-database settings (ALTER DATABASE ... SET) are read afresh by every
// worker.
extern "C" {
#include "postgres.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "purge/purge_status.hpp"
#include "purge/purge_worker.hpp"
#include "purge/worker_session.hpp"
#include "settings.hpp"

namespace {

// A database the launcher serves: the worker running for it, and what decides when the next
// one is due. The due time is computed afresh from the settings of the moment, so that a
// reload that lowers inbox.purge_interval applies at once, not after the old interval.
struct ServedDatabase {
    Oid database;
    BackgroundWorkerHandle* worker;  // null when none runs
    TimestampTz last_run;            // when the last worker started or ended; 0: never
    WorkerSchedule schedule;         // what that worker said about the next one
};

TimestampTz next_run(const ServedDatabase* entry) {
    if (entry->last_run == 0 || entry->schedule.continue_now) return entry->last_run;
    int interval_ms =
        entry->schedule.interval_ms != 0 ? entry->schedule.interval_ms : purge_interval_ms;
    return TimestampTzPlusMilliseconds(entry->last_run, interval_ms);
}

struct Served {
    ServedDatabase* entries;
    int count;
    int capacity;
};

// The databases a worker may connect to, from the shared catalog pg_database.
Oid* list_databases(int* count, MemoryContext context) {
    int capacity = 16;
    Oid* databases = static_cast<Oid*>(MemoryContextAlloc(context, capacity * sizeof(Oid)));
    *count = 0;
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    Relation catalog = table_open(DatabaseRelationId, AccessShareLock);
    TableScanDesc scan = table_beginscan_catalog(catalog, 0, nullptr);
    HeapTuple tuple;
    while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        Form_pg_database database = (Form_pg_database)GETSTRUCT(tuple);
        if (!database->datallowconn || database->datistemplate) continue;
        if (*count == capacity) {
            capacity *= 2;
            databases = static_cast<Oid*>(repalloc(databases, capacity * sizeof(Oid)));
        }
        databases[(*count)++] = database->oid;
    }
    table_endscan(scan);
    table_close(catalog, AccessShareLock);
    PopActiveSnapshot();
    CommitTransactionCommand();
    return databases;
}

// Brings the served list in line with pg_database: new databases are due now, dropped ones go
// (with their inbox.workers row).
void follow_databases(Served* served, MemoryContext context) {
    int count = 0;
    Oid* databases = list_databases(&count, context);
    forget_workers_except(databases, count);

    int kept = 0;
    for (int i = 0; i < served->count; i++) {
        bool live = false;
        for (int j = 0; j < count && !live; j++) live = databases[j] == served->entries[i].database;
        if (live || served->entries[i].worker != nullptr)
            served->entries[kept++] = served->entries[i];
    }
    served->count = kept;
    for (int j = 0; j < count; j++) {
        bool known = false;
        for (int i = 0; i < served->count && !known; i++)
            known = served->entries[i].database == databases[j];
        if (known) continue;
        if (served->count == served->capacity) {
            served->capacity *= 2;
            served->entries = static_cast<ServedDatabase*>(
                repalloc(served->entries, served->capacity * sizeof(ServedDatabase)));
        }
        served->entries[served->count++] = {.database = databases[j],
                                            .worker = nullptr,
                                            .last_run = 0,
                                            .schedule = {.continue_now = false, .interval_ms = 0}};
    }
    pfree(databases);
}

// Forgets workers that have exited, keeping what they said about the next one.
void reap_workers(Served* served) {
    for (int i = 0; i < served->count; i++) {
        ServedDatabase* entry = &served->entries[i];
        pid_t pid;
        if (entry->worker == nullptr || GetBackgroundWorkerPid(entry->worker, &pid) != BGWH_STOPPED)
            continue;
        pfree(entry->worker);
        entry->worker = nullptr;
        entry->last_run = GetCurrentTimestamp();
        entry->schedule = worker_schedule(entry->database);
    }
}

bool start_worker(ServedDatabase* entry) {
    BackgroundWorker worker = {};
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_ConsistentState;
    worker.bgw_restart_time = BGW_NEVER_RESTART;  // the launcher starts the next one
    strlcpy(worker.bgw_library_name, "inbox", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "inbox_purge_worker_main", BGW_MAXLEN);
    snprintf(worker.bgw_name, BGW_MAXLEN, "%s for database %u", purge_worker_type, entry->database);
    strlcpy(worker.bgw_type, purge_worker_type, BGW_MAXLEN);
    worker.bgw_main_arg = ObjectIdGetDatum(entry->database);
    worker.bgw_notify_pid = MyProcPid;
    return RegisterDynamicBackgroundWorker(&worker, &entry->worker);
}

// No max_worker_processes slot was free. On a standby that costs nothing, since its workers only
// report "standby" until promotion, and is to be expected: workers registered to start when
// recovery ends (BgWorkerStart_RecoveryFinished) hold their slots all through recovery. So only
// a primary warns.
void report_no_worker_slot() {
    if (RecoveryInProgress())
        ereport(DEBUG1,
                (errmsg("%s could not start a purge worker during recovery", purge_launcher_type)));
    else
        ereport(WARNING, (errmsg("%s could not start a purge worker", purge_launcher_type),
                          errhint("Raise max_worker_processes.")));
}

// Starts the workers that are due; returns how long the launcher may sleep.
long start_due_workers(Served* served) {
    TimestampTz now = GetCurrentTimestamp();
    TimestampTz wake = TimestampTzPlusMilliseconds(now, purge_interval_ms);
    bool warned = false;
    for (int i = 0; i < served->count; i++) {
        ServedDatabase* entry = &served->entries[i];
        if (entry->worker != nullptr) continue;
        if (next_run(entry) <= now) {
            // Also the schedule of a worker that fails or finds no extension: one interval on.
            entry->last_run = now;
            entry->schedule.continue_now = false;
            if (!start_worker(entry) && !warned) {
                report_no_worker_slot();
                warned = true;
            }
        }
        if (next_run(entry) < wake) wake = next_run(entry);
    }
    return Max(TimestampDifferenceMilliseconds(now, wake), 1);
}

}  // namespace

void register_purge_launcher() {
    BackgroundWorker launcher = {};
    launcher.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    // Consistent state rather than recovery finished: on a hot standby the launcher runs too,
    // and its workers report "standby" until a promotion lets them purge.
    launcher.bgw_start_time = BgWorkerStart_ConsistentState;
    launcher.bgw_restart_time = 5;
    strlcpy(launcher.bgw_library_name, "inbox", BGW_MAXLEN);
    strlcpy(launcher.bgw_function_name, "inbox_purge_launcher_main", BGW_MAXLEN);
    strlcpy(launcher.bgw_name, purge_launcher_type, BGW_MAXLEN);
    strlcpy(launcher.bgw_type, purge_launcher_type, BGW_MAXLEN);
    RegisterBackgroundWorker(&launcher);
}

void inbox_purge_launcher_main(Datum) {
    take_worker_signals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    pgstat_report_appname(purge_launcher_type);

    MemoryContext context =
        AllocSetContextCreate(TopMemoryContext, purge_launcher_type, ALLOCSET_DEFAULT_SIZES);
    Served served = {.entries = static_cast<ServedDatabase*>(
                         MemoryContextAlloc(context, 16 * sizeof(ServedDatabase))),
                     .count = 0,
                     .capacity = 16};
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        MemoryContext caller = MemoryContextSwitchTo(context);
        reap_workers(&served);
        long sleep_ms = purge_interval_ms;
        if (purge_worker_enabled) {
            follow_databases(&served, context);
            sleep_ms = start_due_workers(&served);
        } else {
            workers_turned_off();
        }
        MemoryContextSwitchTo(caller);
        pgstat_report_activity(STATE_IDLE, nullptr);
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, sleep_ms,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
    }
}
