// The purge workers.
//
// The launcher connects to no database (it reads only the shared catalog pg_database, so it
// never stands in the way of DROP DATABASE) and, every inbox.purge_interval, starts one
// short-lived worker per database that allows connections and is not a template. The worker
// connects, purges if the extension is installed there and this is a primary, and exits. So
// CREATE/DROP EXTENSION and new or dropped databases need no configuration, per-database
// settings (ALTER DATABASE ... SET) are read afresh by every worker, and no worker holds a
// database for more than about a second: a worker with more to delete stops after
// `worker_time_budget_ms` and asks the launcher for an immediate successor, which keeps DROP
// DATABASE (which waits up to 5 s for other sessions to leave) and CREATE DATABASE ... TEMPLATE
// unblocked.
//
// Workers connect as the bootstrap superuser, the one role that can connect to every database
// whoever owns it, and delete the markers as the owner of inbox.messages (see purge.cpp).
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

PGDLLEXPORT void inbox_purge_launcher_main(Datum);
PGDLLEXPORT void inbox_purge_worker_main(Datum database);
}

#include "purge.hpp"
#include "purge_settings.hpp"
#include "purge_worker.hpp"
#include "worker_status.hpp"

namespace {

constexpr long worker_time_budget_ms = 1000;
constexpr const char* launcher_type = "inbox purge launcher";
constexpr const char* worker_type = "inbox purge worker";

void handle_signals() {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
}

// ---- the launcher ------------------------------------------------------------------------

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
        served->entries[served->count++] = {databases[j], nullptr, 0, {false, 0}};
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
    snprintf(worker.bgw_name, BGW_MAXLEN, "%s for database %u", worker_type, entry->database);
    strlcpy(worker.bgw_type, worker_type, BGW_MAXLEN);
    worker.bgw_main_arg = ObjectIdGetDatum(entry->database);
    worker.bgw_notify_pid = MyProcPid;
    return RegisterDynamicBackgroundWorker(&worker, &entry->worker);
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
                ereport(WARNING, (errmsg("%s could not start a purge worker", launcher_type),
                                  errhint("Raise max_worker_processes.")));
                warned = true;
            }
        }
        if (next_run(entry) < wake) wake = next_run(entry);
    }
    return Max(TimestampDifferenceMilliseconds(now, wake), 1);
}

// ---- the worker ---------------------------------------------------------------------------

Oid served_database = InvalidOid;
char served_database_name[NAMEDATALEN];

// The server-wide values (postgresql.conf, ALTER SYSTEM), read before the database's own
// settings apply.
int server_batch_size = 0;
int server_interval_ms = 0;

// Settings that a database owner may give the database (ALTER DATABASE ... SET is open to the
// owner for these) and that would stop or throttle the purge. The worker pins them for its
// session, as autovacuum pins its own. inbox.purge_batch_size is pinned to the server-wide
// value; inbox.retention, inbox.purge_interval and inbox.purge_worker only a superuser can set
// for a database, so those per-database values are honoured.
struct PinnedSetting {
    const char* name;
    const char* value;
};
constexpr PinnedSetting pinned_settings[] = {
    {"default_transaction_read_only", "off"},
    {"default_transaction_isolation", "read committed"},
    {"statement_timeout", "0"},
    {"lock_timeout", "0"},
    {"idle_in_transaction_session_timeout", "0"},
    {"search_path", "pg_catalog, pg_temp"},
    {"enable_indexscan", "on"},
    {"enable_indexonlyscan", "on"},
    {"enable_bitmapscan", "on"},
    {"enable_tidscan", "on"},
};

void remember_server_settings() {
    server_batch_size = purge_batch_size;
    server_interval_ms = purge_interval_ms;
}

void pin_session_settings() {
    for (const PinnedSetting& setting : pinned_settings)
        SetConfigOption(setting.name, setting.value, PGC_SUSET, PGC_S_OVERRIDE);
    char batch_size[16];
    snprintf(batch_size, sizeof(batch_size), "%d", server_batch_size);
    SetConfigOption("inbox.purge_batch_size", batch_size, PGC_SUSET, PGC_S_OVERRIDE);
}

// The database's own inbox.purge_interval, 0 when it has none.
int database_interval_ms() {
    return purge_interval_ms != server_interval_ms ? purge_interval_ms : 0;
}

void on_worker_exit(int, Datum) {
    worker_exits(served_database);
}

void commit_worker_batch() {
    CommitTransactionCommand();
    StartTransactionCommand();
}

// A worker lives for one run of at most about a second: the next one starts with the settings
// as reloaded, so a worker does not reload midway (its SIGHUP handler only notes the request).
void report_worker_progress(const PurgeProgress* progress) {
    worker_cycle_progress(served_database, progress->deleted);
}

// Purges what one worker process may: until done, or out of its time budget.
void purge_this_database() {
    worker_cycle_begins(served_database);
    pgstat_report_activity(STATE_RUNNING, "purging expired markers");
    TimestampTz start = GetCurrentTimestamp();
    PurgeRun run = {purge_cutoff_now(),
                    purge_batch_size,
                    false,
                    commit_worker_batch,
                    TimestampTzPlusMilliseconds(start, worker_time_budget_ms),
                    report_worker_progress};
    PurgeProgress progress = purge_expired_markers(&run);
    CommitTransactionCommand();

    bool finished = progress.outcome != PurgeOutcome::out_of_time;
    TimestampTz now = GetCurrentTimestamp();
    CycleTotals cycle = worker_cycle_ends(served_database, progress.deleted, progress.batches,
                                          finished, database_interval_ms());
    if (finished && cycle.deleted > 0)
        ereport(purge_log_level,
                (errmsg("%s of database \"%s\" deleted %lld expired markers in %lld batches "
                        "in %ld ms (%s)",
                        worker_type, served_database_name, (long long)cycle.deleted,
                        (long long)cycle.batches, TimestampDifferenceMilliseconds(cycle.start, now),
                        purge_outcome_name(progress.outcome))));
    pgstat_report_activity(STATE_IDLE, nullptr);
}

void serve_database() {
    StartTransactionCommand();
    bool installed = OidIsValid(get_extension_oid("inbox", true));
    bool standby = RecoveryInProgress();
    strlcpy(served_database_name, get_database_name(served_database), NAMEDATALEN);
    CommitTransactionCommand();
    if (!installed) {
        forget_worker(served_database);
        return;
    }
    worker_starts(served_database, standby);
    if (standby || !purge_worker_enabled) return;
    StartTransactionCommand();
    purge_this_database();
}

}  // namespace

void register_purge_workers() {
    if (!process_shared_preload_libraries_in_progress) return;
    request_worker_status_memory();

    BackgroundWorker launcher = {};
    launcher.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    // Consistent state rather than recovery finished: on a hot standby the launcher runs too,
    // and its workers report "standby" until a promotion lets them purge.
    launcher.bgw_start_time = BgWorkerStart_ConsistentState;
    launcher.bgw_restart_time = 5;
    strlcpy(launcher.bgw_library_name, "inbox", BGW_MAXLEN);
    strlcpy(launcher.bgw_function_name, "inbox_purge_launcher_main", BGW_MAXLEN);
    strlcpy(launcher.bgw_name, launcher_type, BGW_MAXLEN);
    strlcpy(launcher.bgw_type, launcher_type, BGW_MAXLEN);
    RegisterBackgroundWorker(&launcher);
}

void inbox_purge_launcher_main(Datum) {
    handle_signals();
    BackgroundWorkerInitializeConnection(nullptr, nullptr, 0);
    pgstat_report_appname(launcher_type);

    MemoryContext context =
        AllocSetContextCreate(TopMemoryContext, launcher_type, ALLOCSET_DEFAULT_SIZES);
    Served served = {
        static_cast<ServedDatabase*>(MemoryContextAlloc(context, 16 * sizeof(ServedDatabase))), 0,
        16};
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
        }
        MemoryContextSwitchTo(caller);
        pgstat_report_activity(STATE_IDLE, nullptr);
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, sleep_ms,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
    }
}

void inbox_purge_worker_main(Datum database) {
    handle_signals();
    served_database = DatumGetObjectId(database);
    remember_server_settings();
    BackgroundWorkerInitializeConnectionByOid(served_database, InvalidOid, 0);
    pin_session_settings();
    pgstat_report_appname(worker_type);
    before_shmem_exit(on_worker_exit, (Datum)0);

    PG_TRY();
    { serve_database(); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(TopMemoryContext);
        ErrorData* error = CopyErrorData();
        worker_failed(served_database, error->message);
        PG_RE_THROW();
    }
    PG_END_TRY();
    proc_exit(0);
}
