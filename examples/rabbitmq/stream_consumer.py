#!/usr/bin/env python3
"""A consumer of a RabbitMQ stream queue that applies each message exactly once, with inbox's
stream positions, in Python (pika and psycopg 3; Debian: python3-pika python3-psycopg).

A stream is a log: its messages stay, at offsets 0, 1, 2..., and a consumer says where to start.
This one resumes at the stream's committed position + 1 (inbox.stream_position), or at the first
offset of a stream never claimed, and claims each delivery's x-stream-offset with
inbox.claim_position in the transaction of its work (the handler examples.apply_payment(jsonb)):
the work and the position commit together or not at all. An offset at or below the position
answers duplicate and is skipped: a consumer started from an older offset (--from, as from the
offset a broker kept, which lags) applies nothing twice. A handler that raises stops the
consumer with its transaction rolled back: a stream cannot set one message aside, and the
position stays before it.

    stream_consumer.py [--from OFFSET|first]

The database: examples/schema.sql; the PG* environment variables connect. The broker: AMQP_URL
(by default amqp://guest:guest@localhost:5672/%2F). After the set-up of examples/README.md, from
the top of the tree: payments 1 to 4 published and applied, then 5 and 6 published and the
consumer started again, which resumes after its position and applies only those; then started
from offset 2, below its position, which applies nothing:

    export PGHOST=localhost PGDATABASE=inbox_examples
    export PGUSER=inbox_example PGPASSWORD=inbox_example
    python3 examples/rabbitmq/stream_publish.py 1 4
    python3 examples/rabbitmq/stream_consumer.py
    python3 examples/rabbitmq/stream_publish.py 5 6
    python3 examples/rabbitmq/stream_consumer.py
    python3 examples/rabbitmq/stream_consumer.py --from 2

prints:

    published pay-0001 to pay-0004 to the stream inbox_examples.payment_stream
    from first: no position yet
    offset 0: pay-0001 next, applied
    offset 1: pay-0002 next, applied
    offset 2: pay-0003 next, applied
    offset 3: pay-0004 next, applied
    caught up at position 3: 4 applied, 0 duplicates
    balances: acct-1=50.00 acct-2=75.00
    published pay-0005 to pay-0006 to the stream inbox_examples.payment_stream
    from offset 4: position 3 + 1
    offset 4: pay-0005 next, applied
    offset 5: pay-0006 next, applied
    caught up at position 5: 2 applied, 0 duplicates
    balances: acct-1=112.50 acct-2=150.00
    from offset 2: --from, position 5
    offset 2: pay-0003 duplicate, skipped
    offset 3: pay-0004 duplicate, skipped
    offset 4: pay-0005 duplicate, skipped
    offset 5: pay-0006 duplicate, skipped
    caught up at position 5: 0 applied, 4 duplicates
    balances: acct-1=112.50 acct-2=150.00

It stops once the stream has delivered nothing for IDLE_EXIT_SECONDS (caught up); a service
would go on consuming.
"""

import argparse
import os

import pika
import psycopg

CONSUMER = "examples.payments"
QUEUE = "inbox_examples.payment_stream"
STREAM = QUEUE  # the stream's name in inbox: here the queue's
# RabbitMQ requires a prefetch of a stream's consumers; the ack only gives it credit for more.
PREFETCH = 100
IDLE_EXIT_SECONDS = 2


def consume(db, channel, start_from=None):
    """Applies the stream's payments from the committed position + 1 (or start_from) until
    caught up, and prints each offset's answer."""
    channel.basic_qos(prefetch_count=PREFETCH)
    position = db.execute("SELECT inbox.stream_position(%s, %s)",
                          (CONSUMER, STREAM)).fetchone()[0]
    if start_from is not None:
        start, why = start_from, f"--from, position {position}"
    elif position is None:
        start, why = "first", "no position yet"
    else:
        start, why = position + 1, f"position {position} + 1"
    print(f"from {start if start == 'first' else f'offset {start}'}: {why}")
    answers = {"next": 0, "duplicate": 0}
    for method, properties, body in channel.consume(
            QUEUE, arguments={"x-stream-offset": start}, inactivity_timeout=IDLE_EXIT_SECONDS):
        if method is None:  # nothing for IDLE_EXIT_SECONDS: caught up
            break
        offset = properties.headers["x-stream-offset"]
        with db.transaction():
            answer = db.execute("SELECT inbox.claim_position(%s, %s, %s)",
                                (CONSUMER, STREAM, offset)).fetchone()[0]
            if answer == "next":  # the work, in the transaction that moves the position
                db.execute("SELECT examples.apply_payment(%s::jsonb)", (body.decode(),))
        channel.basic_ack(method.delivery_tag)  # after the COMMIT, next or duplicate
        answers[answer] += 1
        print(f"offset {offset}: {properties.message_id} {answer}, "
              f"{'applied' if answer == 'next' else 'skipped'}")
    channel.cancel()
    position = db.execute("SELECT inbox.stream_position(%s, %s)",
                          (CONSUMER, STREAM)).fetchone()[0]
    print(f"caught up at position {position}: {answers['next']} applied, "
          f"{answers['duplicate']} duplicates")


def start_offset(text):
    return text if text == "first" else int(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="start_from", type=start_offset, metavar="OFFSET|first",
                        help="start there instead of at the committed position + 1")
    args = parser.parse_args()
    url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/%2F")
    amqp = pika.BlockingConnection(pika.URLParameters(url))
    channel = amqp.channel()
    # As examples/rabbitmq/stream_publish.py declares it.
    channel.queue_declare(QUEUE, durable=True, arguments={"x-queue-type": "stream"})
    with psycopg.connect(autocommit=True) as db:  # transactions are explicit
        consume(db, channel, args.start_from)
        balances = db.execute("SELECT string_agg(id || '=' || balance, ' ' ORDER BY id)"
                              " FROM examples.accounts").fetchone()[0]
    amqp.close()
    print(f"balances: {balances}")


if __name__ == "__main__":
    main()
