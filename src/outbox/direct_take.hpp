// The lease of relay_take made without a statement: the undelivered index of
// inbox.outbox_messages read once from the scan floor, each candidate that is the head of its key
// leased with one update that does not wait (a message another transaction writes or locks is
// left, as SKIP LOCKED leaves it). What inbox.relay_take_messages's statement does, at a fraction
// of its cost: no lock before the update, no array of row addresses, no sort, no second copy of
// the rows.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
#include "utils/tuplestore.h"
}

struct TakeRequest {
    text* relay;
    int32 max_messages;
    Interval* lease;
    ArrayType* destinations;  // nullptr: every destination
    int64 scan_floor;
    int32 max_attempts;
    TimestampTz now;  // once every lock is granted: the lease runs from it
};

// The table and the two indexes a direct take reads.
struct TakeTables {
    Oid table;
    Oid undelivered;  // (ordinal)
    Oid key_order;    // (destination, key, ordinal) WHERE key IS NOT NULL
};

// Whether the take can be made directly: the table and its two scanned indexes as the extension
// creates them, and nothing that only a statement honours (a permission hook, a parallel mode).
// When it can, *tables says where, and the table stays locked (ROW EXCLUSIVE) to the end of the
// transaction: nothing can change its shape meanwhile.
bool direct_take_possible(TakeTables* tables);

// Leases up to max_messages messages and appends the leased ones to rows (id, destination, key,
// headers, payload, attempt, payload_bytes), in send order; a message whose lease expired after
// max_attempts takes is made dead instead.
void take_directly(const TakeTables& tables, const TakeRequest& request, Tuplestorestate* rows,
                   TupleDesc row_shape);
