// Module initialisation: the library's identity and what it registers when loaded.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

#include "claim_stats.hpp"
#include "purge_settings.hpp"
#include "purge_worker.hpp"

// Settings are defined before the prefix is reserved, or values from postgresql.conf are lost.
void _PG_init(void) {
    claim_stats_init();
    define_purge_settings();
    register_purge_workers();
    MarkGUCPrefixReserved("inbox");
}
