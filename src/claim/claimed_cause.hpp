// The cause of what a transaction sends: the latest claim it holds (consumer, message id), which
// inbox.send records with the message (inbox.claimed_cause()). Kept per backend in a fixed
// buffer, stamped with the transaction and the subtransaction that made the claim, so that
// nothing leaks into the next transaction and a claim rolled back to a savepoint is forgotten.
// The claim path only copies bytes here: no allocation, no catalog access, no error.
#pragma once

extern "C" {
#include "postgres.h"
}

// The claim of `message_id` by `consumer` (validated: at most 64 and 128 bytes) is now the
// transaction's latest, the cause of what it sends next.
void remember_claim(const text* consumer, const text* message_id);

// The current transaction's latest claim as two text values (palloc'd in the current memory
// context), or false without one.
bool claimed_cause(Datum* consumer, Datum* message_id);
