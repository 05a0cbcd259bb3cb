// Deleting delivered outgoing messages (inbox.outbox_delivered) once inbox.outbox_retention has
// passed since their delivery, a batch at a time, within the purge's batches (purge.hpp).
// Undelivered messages (inbox.outbox_messages), dead ones included, are never deleted.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/uuid.h"
}

// Where the walk over the outbox's ids stands: every message up to `after` that could go went.
struct OutboxCursor {
    pg_uuid_t after;
};

OutboxCursor outbox_cursor_start();

// Deletes up to `limit` messages delivered before `cutoff`, in id order after the cursor, in
// the caller's SPI connection as the store's owner, and moves the cursor; returns how many went.
int64 delete_delivered_messages(OutboxCursor* cursor, TimestampTz cutoff, int64 limit);
