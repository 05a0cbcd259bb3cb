// A purge worker: connects to one database, purges if the extension is installed there and
// this is a primary, and exits. No worker holds a database for more than about a second: one
// with more to delete stops after `worker_time_budget_ms` and asks the launcher for an immediate
// successor, which keeps DROP DATABASE (which waits up to 5 s for other sessions to leave) and
// CREATE DATABASE ... TEMPLATE unblocked.
//
// Workers connect as the bootstrap superuser, the one role that can connect to every database
// whoever owns it, and delete the markers as the owner of the marker store (marker_table.hpp).
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/backend_status.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "purge/purge.hpp"
#include "purge/purge_status.hpp"
#include "purge/purge_worker.hpp"
#include "purge/worker_session.hpp"
#include "settings.hpp"

namespace {

constexpr long worker_time_budget_ms = 1000;

Oid served_database = InvalidOid;
char served_database_name[NAMEDATALEN];

// The server-wide value (postgresql.conf, ALTER SYSTEM), read before the database's own
// settings apply.
int server_batch_size = 0;

void remember_server_settings() {
    server_batch_size = purge_batch_size;
}

// inbox.purge_batch_size may be set for a database by its owner, and is pinned to the
// server-wide value with the other settings the owner could use against the purge
// (worker_session.hpp); inbox.retention, inbox.purge_interval and inbox.purge_worker only a
// superuser can set for a database, so those per-database values are honoured.
void pin_session_settings() {
    pin_worker_settings();
    char batch_size[16];
    snprintf(batch_size, sizeof(batch_size), "%d", server_batch_size);
    SetConfigOption("inbox.purge_batch_size", batch_size, PGC_SUSET, PGC_S_OVERRIDE);
}

// The database's own inbox.purge_interval (ALTER DATABASE ... SET, or a setting of the role the
// worker runs as), 0 when it follows the server-wide value, which the launcher itself reloads.
// Told by where the value came from: a database's own value may equal the server-wide one.
int database_interval_ms() {
    const config_generic* setting = pg::find_setting("inbox.purge_interval");
    return setting != nullptr && setting->source >= PGC_S_GLOBAL ? purge_interval_ms : 0;
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
// After each batch it shows how far it got in inbox.workers.
void report_worker_progress(const PurgeProgress* progress) {
    worker_cycle_progress(served_database, progress->deleted);
}

// Purges what one worker process may: until done, or out of its time budget.
void purge_this_database() {
    worker_cycle_begins(served_database);
    pgstat_report_activity(STATE_RUNNING, "purging expired markers");
    TimestampTz start = GetCurrentTimestamp();
    PurgeRun run = {.now = GetCurrentTransactionStartTimestamp(),
                    .batch_size = purge_batch_size,
                    .wait_for_turn = false,
                    .commit = commit_worker_batch,
                    .deadline = TimestampTzPlusMilliseconds(start, worker_time_budget_ms),
                    .after_batch = report_worker_progress};
    PurgeProgress progress = purge_expired_markers(&run);
    CommitTransactionCommand();

    CycleTotals cycle = worker_cycle_ends(served_database, progress, database_interval_ms());
    if (cycle.complete && cycle.deleted > 0)
        log_purge(purge_worker_type, served_database_name,
                  {.deleted = cycle.deleted,
                   .batches = cycle.batches,
                   .outcome = progress.outcome,
                   .messages_deleted = 0},
                  cycle.start);
    log_outbox_purge(purge_worker_type, served_database_name, progress.messages_deleted);
    pgstat_report_activity(STATE_IDLE, nullptr);
}

void serve_database() {
    StartTransactionCommand();
    bool installed = OidIsValid(get_extension_oid("inbox", true));
    bool standby = RecoveryInProgress();
    strlcpy(served_database_name, get_database_name(served_database), NAMEDATALEN);
    // A Citus worker node leaves the distributed markers to the coordinator's purge, and so
    // serves no database of its own here.
    PushActiveSnapshot(GetTransactionSnapshot());
    bool served_here = installed && purges_here();
    PopActiveSnapshot();
    CommitTransactionCommand();
    if (!served_here) {
        forget_worker(served_database);
        return;
    }
    worker_starts(served_database, standby, purge_worker_enabled);
    if (standby || !purge_worker_enabled) return;
    StartTransactionCommand();
    purge_this_database();
}

}  // namespace

void inbox_purge_worker_main(Datum database) {
    take_worker_signals();
    served_database = DatumGetObjectId(database);
    remember_server_settings();
    BackgroundWorkerInitializeConnectionByOid(served_database, InvalidOid, 0);
    pin_session_settings();
    pgstat_report_appname(purge_worker_type);
    before_shmem_exit(on_worker_exit, (Datum)0);

    PG_TRY();
    { serve_database(); }
    PG_CATCH();
    {
        // Reported first, and recorded as reported: the log hooks of other libraries may name
        // the error better (Citus turns the cancel of a distributed deadlock into one).
        MemoryContextSwitchTo(TopMemoryContext);
        EmitErrorReport();
        ErrorData* error = CopyErrorData();
        worker_failed(served_database, error->message);
        FlushErrorState();
        proc_exit(1);
    }
    PG_END_TRY();
    proc_exit(0);
}
