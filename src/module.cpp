// Module initialisation: the library's identity, and what it registers when it is loaded.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;
}

#include "drop/drop_guard.hpp"
#include "pg/compat.hpp"
#include "pg/shared_memory.hpp"
#include "purge/purge_status.hpp"
#include "purge/purge_worker.hpp"
#include "settings.hpp"
#include "stats/attempts_table.hpp"
#include "stats/stats_table.hpp"
#include "store/messages_delete.hpp"

// Settings are defined before the prefix is reserved, or values from postgresql.conf are lost.
// Shared memory and the purge launcher exist only when the library is preloaded; the drop guard's
// hook is installed in every backend that loads it.
void _PG_init(void) {
    define_settings();
    MarkGUCPrefixReserved("inbox");
    install_messages_delete_rewrite();
    install_drop_guard_hook();
    if (!process_shared_preload_libraries_in_progress) return;

    request_stats_memory();
    request_attempts_memory();
    request_purge_status_memory();
    pg::install_shared_memory();
    register_purge_launcher();
}
