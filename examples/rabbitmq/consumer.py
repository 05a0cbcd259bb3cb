#!/usr/bin/env python3
"""An idempotent RabbitMQ consumer with inbox, in Python (pika and psycopg 3; Debian:
python3-pika python3-psycopg).

RabbitMQ delivers at least once: a producer that retries publishes a message twice, and a
delivery whose ack was lost comes back. For each delivery, one transaction: inbox.apply claims
the message id and runs the handler examples.apply_payment(jsonb) when this is its first
delivery; the commit stores the marker and the work together. Only then is the delivery acked
(processed, or a duplicate whose work was done before). A handler that fails rolls back with its
marker, and the delivery is requeued; after the consumer's max_attempts failures inbox answers
IB001 (poisoned) and the delivery is rejected to the dead-letter queue. Serialization failures
and deadlocks (40001, 40P01) retry the transaction.

The database: examples/schema.sql; the PG* environment variables connect. The broker: AMQP_URL
(by default amqp://guest:guest@localhost:5672/%2F). After the set-up of examples/README.md, with
examples/rabbitmq/publish.py run first, from the top of the tree:

    export PGHOST=localhost PGDATABASE=inbox_examples
    export PGUSER=inbox_example PGPASSWORD=inbox_example
    python3 examples/rabbitmq/consumer.py

prints (each payment processed once, its copy a duplicate; the malformed one failed three
times, then dead-lettered):

    pay-0001: processed, acked
    pay-0002: processed, acked
    pay-0003: processed, acked
    pay-0001: duplicate, acked
    pay-0002: duplicate, acked
    pay-0003: duplicate, acked
    pay-0004: failed (22P02), requeued
    pay-0004: failed (22P02), requeued
    pay-0004: failed (22P02), requeued
    pay-0004: poisoned, dead-lettered
    balances: acct-1=150.25 acct-2=75.50

It stops once the queue has been empty for IDLE_EXIT_SECONDS; a service would go on consuming.
"""

import json
import os

import pika
import psycopg
import psycopg.errors
from psycopg.types.json import Jsonb

CONSUMER = "examples.payments"
HANDLER = "examples.apply_payment(jsonb)"
QUEUE = "inbox_examples.payments"
DEAD_LETTERS = "inbox_examples.payments.dead"
# One delivery in flight at a time keeps the output in the order above; a consumer that commits
# each delivery may take more (each is still its own transaction).
PREFETCH = 1
IDLE_EXIT_SECONDS = 2
MAX_TRANSACTION_ATTEMPTS = 5


def declare_queues(channel):
    """As examples/rabbitmq/publish.py declares them."""
    channel.queue_declare(DEAD_LETTERS, durable=True)
    channel.queue_declare(QUEUE, durable=True, arguments={
        "x-dead-letter-exchange": "", "x-dead-letter-routing-key": DEAD_LETTERS})


def apply(conn, message_id, payment):
    """One transaction: the delivery's outcome (processed, duplicate, failed or poisoned) and,
    for failed, the handler's SQLSTATE."""
    for attempt in range(1, MAX_TRANSACTION_ATTEMPTS + 1):
        try:
            with conn.transaction():
                new = conn.execute("SELECT inbox.apply(%s, %s, %s, %s)",
                                   (CONSUMER, message_id, HANDLER, Jsonb(payment))).fetchone()[0]
            return ("processed" if new else "duplicate"), None
        except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
            if attempt == MAX_TRANSACTION_ATTEMPTS:
                raise
        except psycopg.Error as error:
            if error.sqlstate is None:  # the connection, not the message: stop
                raise
            if error.sqlstate == "IB001":  # max_attempts failed deliveries before this one
                return "poisoned", None
            return "failed", error.sqlstate


def main():
    url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/%2F")
    amqp = pika.BlockingConnection(pika.URLParameters(url))
    channel = amqp.channel()
    declare_queues(channel)
    channel.basic_qos(prefetch_count=PREFETCH)
    with psycopg.connect(autocommit=True) as conn:  # transactions are explicit
        for method, properties, body in channel.consume(QUEUE, inactivity_timeout=IDLE_EXIT_SECONDS):
            if method is None:  # nothing for IDLE_EXIT_SECONDS
                break
            message_id = properties.message_id
            try:
                payment = json.loads(body)
            except ValueError:
                payment = None
            if not message_id or payment is None:  # nothing to key on or to apply: never will be
                channel.basic_reject(method.delivery_tag, requeue=False)
                print(f"{message_id}: unreadable, dead-lettered", flush=True)
                continue

            outcome, sqlstate = apply(conn, message_id, payment)
            if outcome in ("processed", "duplicate"):
                channel.basic_ack(method.delivery_tag)
                print(f"{message_id}: {outcome}, acked", flush=True)
            elif outcome == "failed":
                channel.basic_nack(method.delivery_tag, requeue=True)
                print(f"{message_id}: failed ({sqlstate}), requeued", flush=True)
            else:
                channel.basic_reject(method.delivery_tag, requeue=False)
                print(f"{message_id}: poisoned, dead-lettered", flush=True)
        channel.cancel()
        balances = conn.execute("SELECT string_agg(id || '=' || balance, ' ' ORDER BY id)"
                                " FROM examples.accounts").fetchone()[0]
    amqp.close()
    print(f"balances: {balances}")


if __name__ == "__main__":
    main()
