// Module initialisation: the library's identity and what it registers when loaded.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

PGDLLEXPORT void _PG_init(void);
}

#include "purge_settings.hpp"
#include "purge_worker.hpp"

void _PG_init(void) {
    define_purge_settings();
    register_purge_workers();
    MarkGUCPrefixReserved("inbox");
}
