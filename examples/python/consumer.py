#!/usr/bin/env python3
"""An idempotent consumer with inbox, in Python (psycopg 3; Debian: python3-psycopg).

Applies payment messages to account balances exactly once, however often the broker delivers
them. The loop is broker-agnostic: Broker stands in for your broker's client. Each batch is one
transaction: inbox.apply_batch claims every message and runs the handler apply_payment(jsonb)
for the new ones, each in a subtransaction of its own. After the commit, each message is acked,
nacked (its handler failed: the broker delivers it again) or dead-lettered (it failed
max_attempts times: poisoned). The transaction is retried on serialization failures (40001)
and deadlocks (40P01).

The database: examples/schema.sql (the table examples.accounts, the handler
examples.apply_payment(jsonb), the consumer examples.payments with max_attempts 3). It connects
with the PG* environment variables. After the set-up of examples/README.md, from the top of the
tree:

    export PGHOST=localhost PGDATABASE=inbox_examples
tree:

    export PGUSER=inbox_example PGPASSWORD=inbox_example
    python3 examples/python/consumer.py

prints (each payment processed once, the copies acked as duplicates, the malformed payment failed
three times and then dead-lettered):

    delivered=156 processed=120 duplicate=32 failed=3 poisoned=1 retries=0
    balances: acct-0=11524 acct-1=11972 acct-2=11860 acct-3=11748 acct-4=11636
"""

import collections

import psycopg
import psycopg.errors
from psycopg.types.json import Jsonb

CONSUMER = "examples.payments"
HANDLER = "examples.apply_payment(jsonb)"
MAX_TRANSACTION_ATTEMPTS = 5


# ---------------------------------------------------------------------------- the inbox


def apply_batch(conn, batch):
    """One transaction: returns each message's outcome, in the order of the batch
    (processed, duplicate, failed or poisoned)."""
    messages = [{"id": message["id"], "payload": message["payment"]} for message in batch]
    with conn.transaction():
        rows = conn.execute("SELECT outcome FROM inbox.apply_batch(%s, %s, %s)",
                            (CONSUMER, HANDLER, Jsonb(messages))).fetchall()
    return [outcome for (outcome,) in rows]


def apply_with_retries(conn, batch, totals):
    for attempt in range(1, MAX_TRANSACTION_ATTEMPTS + 1):
        try:
            return apply_batch(conn, batch)
        except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
            if attempt == MAX_TRANSACTION_ATTEMPTS:
                raise
            totals["retries"] += 1


# ---------------------------------------------------------------------------- the broker


def payment(i):
    return {"id": f"pay-{i:04d}",
            "payment": {"account": f"acct-{i % 5}", "amount": (i * 37) % 1000 + 1}}


class Broker:
    """Stands in for your broker, which delivers at least once: payments 1 to 120, every 7th
    one published twice, and one malformed payment; in batches of 10. Every 10th ack is lost,
    so that its message comes back in the next batch; a nacked message comes back later."""

    def __init__(self):
        self.queue = collections.deque()
        for i in range(1, 121):
            self.queue.extend([payment(i)] * (2 if i % 7 == 0 else 1))
            if i == 3:
                self.queue.append({"id": "pay-malformed",
                                   "payment": {"account": "acct-0", "amount": "twelve"}})
        self.redelivered = []
        self.acks = 0
        self.delivered = 0

    def receive(self):
        batch = self.redelivered + [self.queue.popleft() for _ in range(min(10, len(self.queue)))]
        self.redelivered = []
        self.delivered += len(batch)
        return batch

    def ack(self, message):
        self.acks += 1
        if self.acks % 10 == 0:
            self.redelivered.append(message)

    def nack(self, message):
        self.queue.append(message)

    def dead_letter(self, message):
        pass


# ---------------------------------------------------------------------------- the consumer


def main():
    broker = Broker()
    totals = collections.Counter(processed=0, duplicate=0, failed=0, poisoned=0, retries=0)
    with psycopg.connect(autocommit=True) as conn:  # transactions are explicit
        while batch := broker.receive():
            for message, outcome in zip(batch, apply_with_retries(conn, batch, totals)):
                totals[outcome] += 1
                if outcome in ("processed", "duplicate"):
                    broker.ack(message)
                elif outcome == "failed":
                    broker.nack(message)
                elif outcome == "poisoned":
                    broker.dead_letter(message)
                else:
                    raise RuntimeError(f"{message['id']}: unexpected outcome {outcome}")
        balances = conn.execute("SELECT string_agg(id || '=' || balance, ' ' ORDER BY id)"
                                " FROM examples.accounts").fetchone()[0]
    print(f"delivered={broker.delivered} " + " ".join(f"{k}={v}" for k, v in totals.items()))
    print(f"balances: {balances}")


if __name__ == "__main__":
    main()
