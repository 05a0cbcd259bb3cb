// Every setting of the extension (inbox.*), defined in one place.
#pragma once

// Seconds a marker is kept after processed_at (inbox.retention).
extern int purge_retention_s;
// Whether the inbox.retention in force is a role's own (ALTER ROLE ... SET), which the purge
// workers do not follow.
bool retention_set_for_role();
// Seconds a delivered outgoing message is kept after delivered_at (inbox.outbox_retention).
extern int outbox_retention_s;
// Takes and failures before an outgoing message is dead (inbox.outbox_max_attempts).
extern int outbox_max_attempts;
// Markers deleted per batch (one transaction each when the purge commits between batches).
extern int purge_batch_size;
// Milliseconds between two purge cycles of a database's worker.
extern int purge_interval_ms;
// Whether the workers purge (the launcher follows the server-wide value, a database can opt out).
extern bool purge_worker_enabled;
// The level of the message a worker logs for each cycle that deleted something (LOG or DEBUG1).
extern int purge_log_level;
// Whether DROP EXTENSION inbox may delete markers (inbox.allow_drop_with_markers).
extern bool allow_drop_with_markers;
// Who registers a consumer (inbox.consumer_registration).
enum class ConsumerRegistration { automatic, configured };
extern int consumer_registration;  // a ConsumerRegistration
// Whether claims are counted for inbox.stats.
extern bool track_stats;
// Consumers with counters of their own, all databases together (postmaster setting; defined
// only when the library is preloaded).
extern int stats_max_consumers;

// Messages whose failed attempts are kept, all databases together (postmaster setting; defined
// only when the library is preloaded).
extern int attempts_max_messages;

// From _PG_init, before the prefix is reserved: every setting is defined whenever the library
// is loaded (so that CALL inbox.purge() follows them without the preload too), the postmaster
// ones only while shared_preload_libraries is processed.
void define_settings();
