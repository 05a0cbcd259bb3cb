// The purge workers: a launcher that finds the databases with the extension, and a short-lived
// worker per database and cycle that runs the same batches as CALL inbox.purge().
#pragma once

// From _PG_init: while the library is being preloaded, registers the launcher and the shared
// memory of inbox.workers; otherwise does nothing.
void register_purge_workers();
