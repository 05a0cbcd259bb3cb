// Deleting expired markers in batches: the one loop behind CALL inbox.purge() and the workers.
// Once no expired marker is left, its batches delete the delivered outgoing messages past
// inbox.outbox_retention (purge_outbox.hpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

enum class PurgeOutcome {
    finished,        // no expired marker is left
    busy,            // another purge of this database held the purge lock: this one yielded
    out_of_time,     // the deadline passed with expired markers left
    extension_gone,  // the marker store does not exist (DROP EXTENSION)
};

struct PurgeProgress {
    int64 deleted;  // markers
    int64 batches;  // batches that deleted at least one marker or message
    PurgeOutcome outcome;
    int64 messages_deleted;  // delivered outgoing messages
};

struct PurgeRun {
    // Markers expire relative to this time: the start of the purge's first transaction (now()),
    // so that a caller knows the cutoffs exactly. A consumer's cutoff is now - its retention
    // (inbox.consumers), or now - inbox.retention.
    TimestampTz now;
    int batch_size;
    // When another purge of the database is at work: wait for its batch (CALL inbox.purge()), or
    // yield to it and stop (the workers).
    bool wait_for_turn;
    // Null: every batch runs in the caller's transaction. Otherwise called after each batch to
    // commit it and start the next transaction; the loop then pauses before the next batch.
    void (*commit)();
    TimestampTz deadline;  // 0: no limit
    // Optional: called after each batch (the worker reports its progress).
    void (*after_batch)(const PurgeProgress* progress);
};

// Deletes expired markers, batch by batch, consumer by consumer, then delivered outgoing
// messages, until none is left, the deadline passes, or (unless run->wait_for_turn) another
// purge is at work. A marker expires when its whole second lies before its consumer's cutoff
// (marker_time.hpp); a delivered message when it was delivered before now -
// inbox.outbox_retention.
PurgeProgress purge_expired_markers(const PurgeRun* run);

const char* purge_outcome_name(PurgeOutcome outcome);

// Logs what a purge of `database` deleted, at inbox.purge_log_level: `purger` is who ran it
// ("inbox purge worker", a pg_cron job), `start` when it began.
void log_purge(const char* purger, const char* database, const PurgeProgress& progress,
               TimestampTz start);

// Logs how many delivered outgoing messages a purge of `database` deleted (none: nothing), at
// inbox.purge_log_level. Apart from the markers, which inbox.purge() returns and inbox.workers
// counts.
void log_outbox_purge(const char* purger, const char* database, int64 deleted);

// Whether this node purges the markers of its database: always, except on a worker node of a
// Citus cluster that distributes them, whose coordinator runs the one purge of the cluster.
bool purges_here();
