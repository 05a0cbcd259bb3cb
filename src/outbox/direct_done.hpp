// relay_done without a statement: the messages found by one walk of their primary key and
// deleted, and, when delivered messages are kept, their records written into
// inbox.outbox_delivered a page at a time. What inbox.relay_done_messages's statements do, without
// their plan, their array scan and the rows handed from the delete to the insert.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/array.h"
}

// The tables a direct settlement writes and the index it finds the messages by.
struct DoneTables {
    Oid messages;
    Oid messages_key;  // the primary key, (id)
    Oid delivered;
};

// Whether the settlement can be made directly: the tables as the extension creates them (the
// delivered one only when keep, the messages are recorded there), and nothing that only a
// statement honours (a permission hook, a parallel mode). When it can, *tables says where.
bool direct_done_possible(bool keep, DoneTables* tables);

// Settles the undelivered messages of ids (a uuid[]; NULL elements and repeated ids count once
// or not at all, as in `id = ANY (ids)`); when keep, each one's record is written into
// inbox.outbox_delivered, delivered at `now`. Returns how many were undelivered.
int32 settle_directly(const DoneTables& tables, ArrayType* ids, bool keep, TimestampTz now);
