// The failed attempts of a claimed message (attempts_table.hpp), kept by the claim around the
// store's insert and delete of its marker: a new marker's attempt follows the transaction
// (pending_claims.hpp), a forgotten marker's failures go with it.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "stats/attempts_table.hpp"
#include "store/consumer.hpp"
#include "store/marker_ops.hpp"

// What the failed attempts of the consumer's message are known by.
AttemptKey attempt_key(const Consumer& consumer, const MessageKey& key);

// How many earlier deliveries of the message failed, and whether that reaches the limit.
int32 earlier_failures(const Consumer& consumer, const MessageKey& key);
bool poisoned(int32 failures, int32 max_attempts);

// Inserts the marker (insert_marker); true when it was new, and its attempt then follows the
// transaction.
bool insert_claimed_marker(const Consumer& consumer, MessageKey* key);

// Inserts the markers of a batch (insert_markers); the attempts of the new ones then follow the
// transaction.
void insert_claimed_markers(const Consumer& consumer, MessageKey* const* keys, int count,
                            bool* inserted);

// What forgetting a message did: its marker (with its details) removed, and how many failed
// attempts of it were cleared.
struct Forgotten {
    bool marker;
    int32 failures;
};

// Deletes the marker, its details and its failed attempts. A consumer not registered (its first
// claims all rolled back) has no marker, but its failures, kept by its name, go.
Forgotten forget_claimed_marker(const Consumer& consumer, bool registered, MessageKey* key);
