// The retention settings (inbox.retention, inbox.purge_*): read by inbox.purge() and the workers.
#pragma once

// Seconds a marker is kept after processed_at.
extern int purge_retention_s;
// Markers deleted per batch (one transaction each when the purge commits between batches).
extern int purge_batch_size;
// Milliseconds between two purge cycles of a database's worker.
extern int purge_interval_ms;
// Whether the workers purge (the launcher follows the server-wide value, a database can opt out).
extern bool purge_worker_enabled;

// The level of the message a worker logs for each cycle that deleted something (LOG or DEBUG1).
extern int purge_log_level;

// Defines the settings; always, preloaded or not, so that CALL inbox.purge() sees them.
void define_purge_settings();
