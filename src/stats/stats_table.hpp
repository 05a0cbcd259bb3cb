// Claim counters per (database, consumer) in shared memory, kept across clean restarts. Built
// like pg_stat_statements: a fixed-size shared hash under one LWLock (named tranche) for its
// structure, a spinlock per entry for its counters.
//
// Each database also has one "database row" (empty consumer name, which no real consumer can
// have): it holds the time of the database's last reset and the counts of consumers that found
// the table full (inbox.max_consumers), so that no claim goes uncounted.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include <cstddef>

#include "store/message_key.hpp"

struct StatsCounters {
    int64 applied;
    int64 duplicates;
    TimestampTz last_duplicate_at;  // 0 when none
    int64 in_progress;              // answers that a copy was held by an open transaction
    int64 payload_mismatches;       // copies whose payload differed from the first delivery's
    int64 poisoned;                 // deliveries refused after max_attempts failures
    int64 attempts_evicted;         // messages whose failed attempts the full table forgot (1.3)
};

// One consumer's counters as read by a snapshot.
struct StatsConsumerRow {
    char consumer[inbox::max_consumer_bytes + 1];
    StatsCounters counters;
};

// What a database's counters look like at one moment.
struct StatsSnapshot {
    StatsConsumerRow* consumers;  // palloc'd
    int consumer_count;
    StatsCounters untracked;     // claims of consumers that found the table full
    TimestampTz counting_since;  // last reset of the database, or when counting began
};

// Asks for the shared table; from _PG_init, while shared_preload_libraries is processed.
void request_stats_memory();

// True once the shared table exists in this process (library preloaded).
bool stats_table_available();

// Adds to the counters of (database, consumer). Never raises an error: a claim that cannot be
// counted (shared memory exhausted) is left out. Safe in a commit callback.
void stats_table_add(Oid database, const char* consumer, std::size_t consumer_len,
                     const StatsCounters& delta);

// The counters of one database.
StatsSnapshot stats_table_snapshot(Oid database);

// Drops the database's consumer entries (freeing their slots) and zeroes its database row.
void stats_table_reset(Oid database);
