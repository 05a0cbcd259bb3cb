// What a transaction's claims become when it ends. A claim that inserted a marker is pending
// until then: when it commits, the claim counts as applied in inbox.stats and its message's
// failed attempts are cleared (it was processed); when it, or the subtransaction the claim ran
// in, rolls back, the delivery is a failed attempt (attempts_table.hpp). Answers that write
// nothing (a duplicate, in_progress, payload_mismatch, poisoned) count when they are given.
// Kept per subtransaction in backend-local memory; nothing here raises an error.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/elog.h"
}

#include "stats/attempts_table.hpp"

// Counts one claim of `consumer` whose answer was `inserted`, and returns that answer, so that
// the call wraps the claim.
bool count_claim(text* consumer, bool inserted);

// Counts `inserted` claims and `duplicates` of one batch.
void count_claims(text* consumer, int64 inserted, int64 duplicates);

enum class Answer { in_progress, payload_mismatch, poisoned };
void count_answer(text* consumer, Answer answer);

// The marker just inserted in the compact store: its message's attempts follow the transaction.
// At most a thousand messages per transaction are followed, and beyond them those that failed
// before; a rollback does not count the others as failed attempts.
void track_attempt(const AttemptKey& claimed);

// The handler of the message claimed in this transaction raised `error`: its failed attempt
// records why.
void note_failure_cause(const AttemptKey& claimed, const ErrorData* error);

// A batch handles a failed message itself (its subtransaction rolled back and its marker is
// removed): the failure is counted now, with its cause, and the message is no longer followed.
void fail_attempt_now(const AttemptKey& failed, const ErrorData* error);
