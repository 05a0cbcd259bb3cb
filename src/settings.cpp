// Units and ranges are enforced by the GUC machinery, so every out-of-range value is refused
// with SQLSTATE 22023 and a message naming the limits.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "utils/guc.h"
}

#include <climits>

#include "settings.hpp"

int purge_retention_s = 30 * 24 * 3600;
int purge_batch_size = 10000;
int purge_interval_ms = 60 * 1000;
bool purge_worker_enabled = true;
int purge_log_level = LOG;
bool track_stats = true;
int stats_max_consumers = 1000;
int attempts_max_messages = 10000;

namespace {

const struct config_enum_entry purge_log_levels[] = {
    {"log", LOG, false}, {"debug1", DEBUG1, false}, {nullptr, 0, false}};

void define_retention_settings() {
    // SUSET: a session of an ordinary user must not shorten the retention and drop markers whose
    // messages can still come back. Superusers set it in postgresql.conf, ALTER SYSTEM or
    // ALTER DATABASE ... SET (the value for that database's worker).
    DefineCustomIntVariable(
        "inbox.retention", "How long a marker is kept after it was processed.",
        "Markers older than this are deleted by inbox.purge() and the purge workers. Must exceed "
        "every path by which a message can come back.",
        &purge_retention_s, 30 * 24 * 3600, 1, INT_MAX, PGC_SUSET, GUC_UNIT_S, nullptr, nullptr,
        nullptr);
    // USERSET: the batch size only shapes the transactions of the caller's own purge (the
    // workers use the server-wide value).
    DefineCustomIntVariable("inbox.purge_batch_size", "Markers deleted per purge batch.",
                            "Each batch is one transaction when the purge commits between batches.",
                            &purge_batch_size, 10000, 1, 1000000, PGC_USERSET, 0, nullptr, nullptr,
                            nullptr);
    // SUSET rather than SIGHUP so that ALTER DATABASE ... SET can give a database its own value.
    DefineCustomIntVariable("inbox.purge_interval",
                            "Time between two purge cycles of a database's purge worker.", nullptr,
                            &purge_interval_ms, 60 * 1000, 100, 24 * 3600 * 1000, PGC_SUSET,
                            GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "inbox.purge_worker", "Whether the purge workers delete expired markers.",
        "The server-wide value starts or stops the workers; ALTER DATABASE ... SET "
        "inbox.purge_worker = off exempts one database.",
        &purge_worker_enabled, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "inbox.purge_log_level", "Level of the message logged for each purge cycle that deleted.",
        "log: every such cycle is in the server log; debug1: only with log_min_messages = debug1.",
        &purge_log_level, LOG, purge_log_levels, PGC_SUSET, 0, nullptr, nullptr, nullptr);
}

void define_statistics_settings() {
    DefineCustomBoolVariable("inbox.track_stats", "Counts claims per consumer for inbox.stats.",
                             "Off, claims are not counted; the counters keep their values.",
                             &track_stats, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    // A postmaster setting can only be defined while the postmaster loads the library.
    if (!process_shared_preload_libraries_in_progress) return;
    DefineCustomIntVariable(
        "inbox.max_consumers",
        "Consumers whose claims are counted separately, all databases together.",
        "Claims of further consumers are counted together, per database, in inbox.stats' row "
        "with a NULL consumer.",
        &stats_max_consumers, 1000, 1, 100000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "inbox.max_failed_messages",
        "Messages whose failed attempts are counted, all databases together.",
        "When more messages fail, the one whose last failure is the oldest is forgotten.",
        &attempts_max_messages, 10000, 100, 10000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
}

}  // namespace

void define_settings() {
    define_retention_settings();
    define_statistics_settings();
}
