// The insert of one outgoing message into inbox.outbox_messages. Into a plain local table
// without an SQL statement: the executor's own routines of INSERT (PostgreSQL's ExecInsert),
// without the plan cache, executor start and end, projection and snapshots that a statement
// costs around them. C-style: inbox.send's hot path.
#pragma once

extern "C" {
#include "postgres.h"
}

// The longest destination and key a message has, in bytes (inbox.send refuses longer ones, 22001).
constexpr int max_outbox_name_bytes = 255;

// The values of a message as inbox.send gives them (also the parameters $1 to $9 of the
// statement that serves a table the direct insert does not): the rest of the row is the
// ordinal (the next of inbox.outbox_ordinal), not_before (the send time), attempts (0) and
// NULLs.
enum OutgoingValue {
    sent_at_value,
    id_value,
    destination_value,
    key_value,
    headers_value,
    payload_value,
    payload_bytes_value,
    cause_consumer_value,
    cause_message_id_value,
    outgoing_values
};

// Inserts the message as `owner` (the extension's owner: the caller needs no privilege on the
// table) and makes it visible to the commands that follow: directly into the table as the
// extension creates it, with an INSERT statement where only the statement does what the table
// asks (triggers, rules, row-level security, CHECK constraints, partitions, columns other than
// the extension's, a permission hook).
void insert_outgoing_message(Oid owner, const Datum values[outgoing_values],
                             const bool nulls[outgoing_values]);

// inbox.outbox_messages, found once (InvalidOid when the extension's schema has none).
Oid outbox_messages_table();
