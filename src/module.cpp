// Module initialisation: the library's identity and what it registers when loaded.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

#include "claim_stats.hpp"

void _PG_init(void) {
    claim_stats_init();
    MarkGUCPrefixReserved("inbox");
}
