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
    extension_gone,  // inbox.messages does not exist (DROP EXTENSION)
};

struct PurgeProgress {
    int64 deleted;
    int64 batches;  // batches that deleted at least one marker
    PurgeOutcome outcome;
};

struct PurgeRun {
    TimestampTz cutoff;  // markers processed before this go
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

// The cutoff that inbox.retention gives at the start of the current transaction (now()), so
// that a caller knows it exactly.
TimestampTz purge_cutoff_now();

// Deletes markers older than run->cutoff, batch by batch, each consumer's oldest first, until
// none is left, the deadline passes, or (unless run->wait_for_turn) another purge is at work.
PurgeProgress purge_expired_markers(const PurgeRun* run);

const char* purge_outcome_name(PurgeOutcome outcome);
