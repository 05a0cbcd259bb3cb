// See worker_session.hpp.
extern "C" {
#include "postgres.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
}

#include "purge/worker_session.hpp"

namespace {

struct PinnedSetting {
    const char* name;
    const char* value;
};

// Read-only transactions and timeouts would make every statement fail; a search_path of the
// owner's would redirect any name not qualified; the scan switches would make the purge crawl.
constexpr PinnedSetting pinned_settings[] = {
    {.name = "default_transaction_read_only", .value = "off"},
    {.name = "default_transaction_isolation", .value = "read committed"},
    {.name = "statement_timeout", .value = "0"},
    {.name = "lock_timeout", .value = "0"},
    {.name = "idle_in_transaction_session_timeout", .value = "0"},
    {.name = "search_path", .value = "pg_catalog, pg_temp"},
    {.name = "enable_indexscan", .value = "on"},
    {.name = "enable_indexonlyscan", .value = "on"},
    {.name = "enable_bitmapscan", .value = "on"},
    {.name = "enable_tidscan", .value = "on"},
};

}  // namespace

void take_worker_signals() {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, die);
    BackgroundWorkerUnblockSignals();
}

void pin_worker_settings() {
    for (const PinnedSetting& setting : pinned_settings)
        SetConfigOption(setting.name, setting.value, PGC_SUSET, PGC_S_OVERRIDE);
}
