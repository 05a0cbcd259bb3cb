// Commit order within a key: a sender takes its message's ordinal under a transaction-level lock
// on (destination, key), the advisory lock the SQL edition takes on
// hashtextextended(octet_length(destination)::text || ':' || destination || key, 7172693807),
// so that of two senders of one key the second numbers its message after the first ended.
//
// Those locks live in the lock table that every session shares (max_locks_per_transaction times
// the number of connections). A transaction that sends to more than max_locks_per_transaction
// keys (a backfill) locks inbox.outbox_messages in SHARE mode instead, once: no other sender, and
// no relay, writes there until it ends, so its keys need no lock of their own, however many there
// are; without it, a few thousand keys filled the table, for every session (53200).
#pragma once

extern "C" {
#include "postgres.h"
}

// Waits until no other transaction that sent to (destination, key) is running (the key's lock,
// or the outbox's SHARE lock once the transaction sent to many keys).
void lock_key_order(const text* destination, const text* key);
