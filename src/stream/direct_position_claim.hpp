// The claim of a stream's positions without an SQL statement, in a plain local
// inbox.stream_positions: the executor's own routines of INSERT ... ON CONFLICT (consumer_id,
// stream) DO UPDATE (PostgreSQL's ExecInsert and ExecOnConflictUpdate), without the plan cache,
// executor start and end, projection and snapshots that a statement costs around them.
// C-style: the hot path of inbox.claim_position.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "store/consumer.hpp"
#include "stream/position_run.hpp"

// Claims positions (ascending, distinct) of the consumer's stream as the store's owner, as the
// statements of claim_position.cpp do: it locks the stream's row, waiting for a claim in flight
// and reading what that claim committed; moves it to the last position that is next, or creates
// it; under REPEATABLE READ a row written after the snapshot is a serialization failure (40001).
// The row stays locked until the transaction ends, and what follows in the transaction sees it.
// True with *run set; false, with nothing done, where only the statements do what the table asks
// (triggers, rules, row-level security, CHECK constraints, partitions, columns or unique indexes
// other than the extension's, a Citus store, a permission hook, SERIALIZABLE, whose predicate
// locks the statements' reads take, the owner's privileges).
bool claim_positions_directly(const Consumer& consumer, text* stream, const int64* ascending,
                              int count, bool contiguous, inbox::PositionRun* run);
