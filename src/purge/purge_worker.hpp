// The purge processes: a launcher (purge_launcher.cpp) that finds the databases and, every
// inbox.purge_interval, starts a short-lived worker per database (purge_worker.cpp) that runs
// the same batches as CALL inbox.purge().
#pragma once

extern "C" {
#include "postgres.h"

PGDLLEXPORT void inbox_purge_launcher_main(Datum);
PGDLLEXPORT void inbox_purge_worker_main(Datum database);
}

// backend_type and application_name of the processes, as pg_stat_activity shows them.
constexpr const char* purge_launcher_type = "inbox purge launcher";
constexpr const char* purge_worker_type = "inbox purge worker";

// From _PG_init, while shared_preload_libraries is processed: registers the launcher.
void register_purge_launcher();
