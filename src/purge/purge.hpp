// Deleting expired markers in batches: the one loop behind CALL inbox.purge() and the workers.
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
    int64 deleted;
    int64 batches;  // batches that deleted at least one marker
    PurgeOutcome outcome;
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

// Deletes expired markers, batch by batch, consumer by consumer, until none is left, the
// deadline passes, or (unless run->wait_for_turn) another purge is at work. A marker expires
// when its whole second lies before its consumer's cutoff (marker_time.hpp).
PurgeProgress purge_expired_markers(const PurgeRun* run);

const char* purge_outcome_name(PurgeOutcome outcome);

// Logs what a purge of `database` deleted, at inbox.purge_log_level: `purger` is who ran it
// ("inbox purge worker", a pg_cron job), `start` when it began.
void log_purge(const char* purger, const char* database, const PurgeProgress& progress,
               TimestampTz start);

// Whether this node purges the markers of its database: always, except on a worker node of a
// Citus cluster that distributes them, whose coordinator runs the one purge of the cluster.
bool purges_here();
