#!/usr/bin/env python3
"""An idempotent consumer with inbox, in Python (psycopg 3; Debian: python3-psycopg).

Applies payment messages to account balances exactly once, however often the broker delivers
them. The loop is broker-agnostic: receive_batch() stands in for your broker's client and ack()
for its acknowledgement. Each batch is one transaction: claim every message with the inbox,
apply the payments claimed now, commit, then ack the whole batch. The transaction is retried
on serialization failures (40001) and deadlocks (40P01).

    CREATE EXTENSION inbox;
    CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL);

Connects with the PG* environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, ...).
"""

import psycopg
import psycopg.errors

CONSUMER = "payments"
MAX_ATTEMPTS = 5


# ---------------------------------------------------------------------------- the inbox


def claim(cur, message_ids):
    """The one place that talks to the inbox. Returns the set of ids claimed now (first
    deliveries: do their work in this transaction); the others were already processed.

    Each id is claimed once, in sorted order, so that two instances claiming overlapping
    batches take their locks in the same order. With inbox 1.1 this becomes one call,
    `SELECT inbox.claim_batch(%s, %s)` with (CONSUMER, message_ids), which does the same; and a
    message whose inbox.receive() outcome is 'poisoned' goes to the dead-letter queue."""
    claimed = set()
    for message_id in sorted(set(message_ids)):
        cur.execute("SELECT inbox.claim(%s, %s)", (CONSUMER, message_id))
        if cur.fetchone()[0]:
            claimed.add(message_id)
    return claimed


# ---------------------------------------------------------------------------- the broker


def payment(i):
    return {"id": f"pay-{i:04d}", "account": f"acct-{i % 5}", "amount": (i * 37) % 1000 + 1}


def receive_batch():
    """Stands in for the broker, which delivers at least once: payments 1 to 120 in batches of
    10; every 7th payment is delivered twice in its batch, and each batch starts with the first
    message of the previous one again (its ack was lost)."""
    redelivery = []
    for start in range(1, 121, 10):
        batch = [payment(i) for i in range(start, start + 10)]
        batch += [payment(i) for i in range(start, start + 10) if i % 7 == 0]
        yield redelivery + batch
        redelivery = [batch[0]]


def ack(batch):
    """Stands in for the broker's acknowledgement, sent only after the commit."""


# ---------------------------------------------------------------------------- the consumer


def apply_batch(conn, batch):
    """One transaction: returns (processed, skipped)."""
    processed = skipped = 0
    with conn.transaction(), conn.cursor() as cur:
        todo = claim(cur, [message["id"] for message in batch])
        for message in batch:
            if message["id"] not in todo:
                skipped += 1  # a duplicate: already processed, here or earlier in this batch
                continue
            todo.discard(message["id"])
            cur.execute(
                "INSERT INTO accounts (id, balance) VALUES (%s, %s) "
                "ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance",
                (message["account"], message["amount"]))
            processed += 1
    return processed, skipped


def main():
    totals = {"processed": 0, "skipped": 0, "retries": 0}
    with psycopg.connect(autocommit=True) as conn:  # transactions are explicit
        for batch in receive_batch():
            for attempt in range(1, MAX_ATTEMPTS + 1):
                try:
                    processed, skipped = apply_batch(conn, batch)
                    break
                except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                    if attempt == MAX_ATTEMPTS:
                        raise
                    totals["retries"] += 1
            ack(batch)
            totals["processed"] += processed
            totals["skipped"] += skipped
    print(" ".join(f"{k}={v}" for k, v in totals.items()))


if __name__ == "__main__":
    main()
