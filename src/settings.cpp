// The definitions of the settings (settings.hpp).
//
// Units and ranges are enforced by the GUC machinery (inbox.retention's by its own check), so
// every out-of-range or malformed value is refused with SQLSTATE 22023 and a message naming the
// limits.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "utils/guc.h"
}

#include <cctype>
#include <cstring>

#include "pg/compat.hpp"
#include "settings.hpp"

int purge_retention_s = 30 * 24 * 3600;
int outbox_retention_s = 7 * 24 * 3600;
int purge_batch_size = 10000;
int purge_interval_ms = 60 * 1000;
bool purge_worker_enabled = true;
int purge_log_level = LOG;
bool track_stats = true;
bool allow_drop_with_markers = false;
int consumer_registration = static_cast<int>(ConsumerRegistration::automatic);
int stats_max_consumers = 1000;
int attempts_max_messages = 10000;
// The outbox's PL/pgSQL functions (the SQL edition has no library) read the value with
// current_setting('inbox.outbox_max_attempts', true) and take 10 when it is not set; the library's
// relay_take reads this variable. Defined here so that, with the library loaded (which reserves
// the prefix), it can be set and is checked.
int outbox_max_attempts = 10;

namespace {

// inbox.retention as given, and as parsed: the seconds, and where the value came from (kept with
// the value, so that a RESET or a rollback that brings an older value back brings its source).
char* purge_retention_text = nullptr;
struct ParsedRetention {
    int seconds;
    GucSource source;
};
const ParsedRetention* retention_in_force = nullptr;

const struct config_enum_entry purge_log_levels[] = {
    {"log", LOG, false}, {"debug1", DEBUG1, false}, {nullptr, 0, false}};

const struct config_enum_entry consumer_registrations[] = {
    {"auto", static_cast<int>(ConsumerRegistration::automatic), false},
    {"configured", static_cast<int>(ConsumerRegistration::configured), false},
    {nullptr, 0, false}};

constexpr const char* retention_hint =
    "Write a number with its unit: '30d', '720h', '90min' or '3600s'.";

// inbox.retention and inbox.outbox_retention are text parsed here rather than integer settings
// with a unit, because PostgreSQL would take a bare number as seconds (a "30" meant as days
// would delete almost every row) and would report '500ms' as "0 s is outside the valid range".
bool has_unit(const char* value) {
    const char* end = value + strlen(value);
    while (end > value && isspace(static_cast<unsigned char>(end[-1]))) end--;
    return end > value && isalpha(static_cast<unsigned char>(end[-1]));
}

// The whole seconds of a retention `value` of the setting `name`, at least one; `kept` says what
// it keeps.
bool check_duration(const char* value, const char* name, const char* kept, int* seconds) {
    if (!has_unit(value)) {
        GUC_check_errdetail("A number without a unit would be read as seconds.");
        GUC_check_errhint("%s", retention_hint);
        return false;
    }
    if (!parse_int(value, seconds, GUC_UNIT_S, nullptr)) {
        GUC_check_errdetail(
            "%s is a duration from 1s to 68 years (2147483647s), with a unit: ms, s, min, h or d.",
            name);
        GUC_check_errhint("%s", retention_hint);
        return false;
    }
    if (*seconds < 1) {
        GUC_check_errdetail(
            "\"%s\" is under one second: %s are kept for whole seconds, 1s at least.", value, kept);
        GUC_check_errhint("%s", retention_hint);
        return false;
    }
    return true;
}

bool check_retention(char** newval, void** extra, GucSource source) {
    int seconds = 0;
    if (!check_duration(*newval, "inbox.retention", "markers", &seconds)) return false;
    // The GUC machinery frees extra itself, with the allocator's counterpart.
    auto* parsed = static_cast<ParsedRetention*>(pg::guc_extra_alloc(sizeof(ParsedRetention)));
    if (parsed == nullptr) {
        GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
        return false;
    }
    *parsed = ParsedRetention{seconds, source};
    *extra = parsed;
    return true;
}

void assign_retention(const char*, void* extra) {
    retention_in_force = static_cast<const ParsedRetention*>(extra);
    purge_retention_s = retention_in_force->seconds;
}

void define_retention_settings() {
    // SUSET: a session of an ordinary user must not shorten the retention and drop markers whose
    // messages can still come back. Superusers set it in postgresql.conf, ALTER SYSTEM or
    // ALTER DATABASE ... SET (the value for that database's worker).
    DefineCustomStringVariable(
        "inbox.retention", "How long a marker is kept after it was processed.",
        "Markers older than this are deleted by inbox.purge() and the purge workers. Must exceed "
        "every path by which a message can come back. A duration with its unit, such as 30d.",
        &purge_retention_text, "30d", PGC_SUSET, 0, check_retention, assign_retention, nullptr);
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

void define_safety_settings() {
    // USERSET: DROP EXTENSION needs the extension's owner anyway; this only says "I mean it".
    DefineCustomBoolVariable(
        "inbox.allow_drop_with_markers",
        "Lets DROP EXTENSION inbox delete the markers, and undelivered outgoing messages, when "
        "there are any.",
        "Off, every way of dropping the extension (DROP EXTENSION, DROP SCHEMA ... CASCADE, "
        "DROP OWNED) is refused while markers exist, and DROP EXTENSION and DROP SCHEMA while "
        "undelivered outgoing messages do.",
        &allow_drop_with_markers, false, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // SUSET: it is a database's policy, which a session of the roles it binds must not lift;
    // superusers set it per database with ALTER DATABASE ... SET. The default keeps 1.1's
    // behaviour, which a library upgrade must not change under running consumers.
    DefineCustomEnumVariable(
        "inbox.consumer_registration", "Who registers a new consumer.",
        "auto: its first claim registers it; configured: only inbox.configure_consumer does, and "
        "a claim for an unknown consumer is refused.",
        &consumer_registration, static_cast<int>(ConsumerRegistration::automatic),
        consumer_registrations, PGC_SUSET, 0, nullptr, nullptr, nullptr);
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

char* outbox_retention_text = nullptr;

// Zero, in any unit or none ("0", "0s", "0 d"): delivered messages are not kept at all.
// inbox.relay_done deletes them at once then; it recognises zero in the same forms.
bool is_zero_duration(const char* value) {
    while (isspace(static_cast<unsigned char>(*value))) value++;
    if (*value != '0') return false;
    while (*value == '0') value++;
    while (isspace(static_cast<unsigned char>(*value))) value++;
    static const char* const units[] = {"", "us", "ms", "s", "min", "h", "d"};
    for (const char* unit : units) {
        size_t length = strlen(unit);
        if (strncmp(value, unit, length) == 0) {
            const char* rest = value + length;
            while (isspace(static_cast<unsigned char>(*rest))) rest++;
            if (*rest == '\0') return true;
        }
    }
    return false;
}

bool check_outbox_retention(char** newval, void** extra, GucSource) {
    int seconds = 0;
    if (!is_zero_duration(*newval) &&
        !check_duration(*newval, "inbox.outbox_retention", "delivered messages", &seconds)) {
        GUC_check_errhint(
            "Write a number with its unit: '7d', '72h' or '3600s'; or 0 to keep "
            "no delivered message.");
        return false;
    }
    auto* parsed = static_cast<int*>(pg::guc_extra_alloc(sizeof(int)));
    if (parsed == nullptr) {
        GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
        return false;
    }
    *parsed = seconds;
    *extra = parsed;
    return true;
}

void assign_outbox_retention(const char*, void* extra) {
    outbox_retention_s = *static_cast<const int*>(extra);
}

void define_outbox_settings() {
    // USERSET: a relay's own sessions may give up sooner or later on the failures they report.
    DefineCustomIntVariable(
        "inbox.outbox_max_attempts",
        "Deliveries of an outgoing message before a failure makes it dead.",
        "inbox.relay_failed marks a message dead when it has been taken this many times; a dead "
        "message is kept and visible until inbox.relay_release.",
        &outbox_max_attempts, 10, 1, 1000000, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // SUSET, as inbox.retention: a session must not shorten it and delete what operators still
    // want to look at.
    DefineCustomStringVariable(
        "inbox.outbox_retention",
        "How long a delivered outgoing message is kept after its delivery.",
        "Delivered messages older than this are deleted by inbox.purge() and the purge workers; "
        "undelivered and dead ones never are. A duration with its unit, such as 7d; 0 keeps "
        "none: inbox.relay_done deletes what it marks delivered.",
        &outbox_retention_text, "7d", PGC_SUSET, 0, check_outbox_retention, assign_outbox_retention,
        nullptr);
}

}  // namespace

bool retention_set_for_role() {
    return retention_in_force != nullptr && (retention_in_force->source == PGC_S_USER ||
                                             retention_in_force->source == PGC_S_DATABASE_USER);
}

void define_settings() {
    define_retention_settings();
    define_statistics_settings();
    define_safety_settings();
    define_outbox_settings();
}
