// The notification of a commit that sent (channel inbox_outbox, payload the destination), queued
// when the transaction commits, not at each send: PostgreSQL refuses to PREPARE a transaction
// that has executed NOTIFY (0A000), and a transaction that sends must be able to take part in a
// two-phase commit as one that claims does. A prepared transaction notifies nothing (nothing
// runs in its backend at COMMIT PREPARED): a relay finds its messages at its next take.
#pragma once

extern "C" {
#include "postgres.h"
}

// The current transaction sent to `destination` (at most 255 bytes): its commit notifies it,
// once, in the order of the first sends; a rollback, or the rollback of the savepoint that the
// only sends to it were made in, forgets it.
void notify_at_commit(const text* destination);
