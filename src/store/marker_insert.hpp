// The insert of one marker into a plain local inbox.markers without an SQL statement: the
// executor's own routines of INSERT ... ON CONFLICT (consumer_id, message_key) DO NOTHING
// (PostgreSQL's ExecInsert), without the plan cache, executor start and end, or snapshots that a
// statement costs around them. C-style: the hot path.
#pragma once

extern "C" {
#include "postgres.h"
}

enum class DirectInsert {
    inserted,     // the marker is new
    conflicted,   // a committed marker (or one of this transaction) exists
    unsupported,  // nothing done: only the statement does what the table asks (see the .cpp)
};

// Inserts the row (time_bucket int4, consumer_id int2, time_offset "char", message_key bytea)
// as the store's owner, with what the statement would do: it waits for an uncommitted copy,
// and under REPEATABLE READ or SERIALIZABLE a conflict with a row the transaction's snapshot
// cannot see is a serialization failure. Its effects are visible to the commands that follow.
DirectInsert insert_marker_directly(const Datum values[4]);
