// inbox.outbox_messages and inbox.outbox_delivered as the extension creates them: their columns,
// in order, and whether a table still has them, so that a row may be read and written there
// without a statement (the send's insert, the take's leases, relay_done's delivered records).
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/relcache.h"
}

// The columns, numbered from 0 (an attribute number less one).
enum OutboxColumn {
    ordinal_column,
    created_at_column,
    not_before_column,
    dead_at_column,
    id_column,
    attempts_column,
    destination_column,
    key_column,
    leased_by_column,
    headers_column,
    payload_column,
    payload_bytes_column,
    last_error_column,
    cause_consumer_column,
    cause_message_id_column,
    outbox_columns
};

// A plain table (pg::plain_table) with the columns above, of the types the extension gives them.
// Decided once per relcache entry of the table (call with the table locked: the lock brings the
// invalidations of what changed it).
bool outbox_table_as_created(Relation table);

// The columns of inbox.outbox_delivered, numbered from 0.
enum DeliveredColumn {
    delivered_created_at_column,
    delivered_at_column,
    delivered_id_column,
    delivered_attempts_column,
    delivered_destination_column,
    delivered_key_column,
    delivered_last_error_column,
    delivered_cause_consumer_column,
    delivered_cause_message_id_column,
    delivered_columns
};

// As outbox_table_as_created, for inbox.outbox_delivered's columns.
bool outbox_delivered_as_created(Relation table);
