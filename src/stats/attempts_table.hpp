// Failed attempts per message, in shared memory, where a rollback cannot undo them: a delivery
// whose claim succeeded and whose transaction (or subtransaction) then rolled back is a failed
// attempt. Bounded by inbox.max_failed_messages, all databases together; when it is full, the
// least recent failure of one consumer is forgotten: of the consumer that fails now, unless
// another consumer holds more messages (so that each keeps a fair share), and that consumer has
// the loss counted (inbox.stats, attempts_evicted). Saved at a clean shutdown and restored at
// the next start; a crash loses them, as it loses the counters. Exists only with the preload;
// without it nothing is counted.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include <cstddef>
#include <cstdint>

#include "store/message_key.hpp"

// The last error message kept per message, cut to fit (at a character boundary).
constexpr int attempt_message_bytes = 160;

// The table's hash key: a message of one consumer, for ever. The message by its message key
// (message_key.hpp); the consumer by its name, not by its id, which a registration that rolls
// back leaves to the next one; and the consumer registry by its OID, which a new one gets (DROP
// and CREATE EXTENSION, a restore), so that a consumer of the same name there starts afresh.
// Zero-padded, so that the key hashes as bytes.
struct AttemptKey {
    Oid database;
    Oid registry;
    uint8 consumer_length;
    char consumer[inbox::max_consumer_bytes];
    uint8 length;
    uint8 message_key[inbox::max_message_key_bytes];
};

AttemptKey make_attempt_key(Oid database, Oid registry, const char* consumer,
                            std::size_t consumer_length, const std::uint8_t* key,
                            std::size_t length);

// What is known of a message's failures; saved at shutdown with its key.
struct AttemptRecord {
    int32 failures;
    int sqlstate;  // of the last failure, 0 when unknown
    TimestampTz last_failed_at;
    char last_message[attempt_message_bytes];  // "" when unknown
};

struct KeptAttempt {
    AttemptKey key;
    AttemptRecord record;
};

// Asks for the table; from _PG_init, while shared_preload_libraries is processed.
void request_attempts_memory();

// One more failure (sqlstate 0 and message NULL when unknown: the work ran outside the
// extension; a message fits attempt_message_bytes). Never raises an error: safe in an abort
// callback.
void attempts_add_failure(const AttemptKey& key, int sqlstate, const char* message);

// Earlier failures of the message; 0 when there were none (or without the preload).
int32 attempts_failures(const AttemptKey& key);

// The message was processed or forgotten: its failures go; returns how many there were. Takes
// the lock exclusively only when the message has failures.
int32 attempts_forget(const AttemptKey& key);

// Whether any failure is kept at all (a lock-free check for the hot path).
bool attempts_any();

// A copy of the failures kept for a database's registry, palloc'd; nullptr (and *count 0)
// without the preload.
KeptAttempt* attempts_kept(Oid database, Oid registry, int* count);

// Whether failed attempts are counted at all: the library was preloaded.
bool attempts_counted();
