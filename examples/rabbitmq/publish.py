#!/usr/bin/env python3
"""Publishes payment messages to RabbitMQ the way producers do: at least once (pika; Debian:
python3-pika). Each payment goes out twice, as from a producer that retried after losing the
broker's confirm, and one payment is malformed. examples/rabbitmq/consumer.py applies them.

The broker: AMQP_URL (by default amqp://guest:guest@localhost:5672/%2F, Debian's
rabbitmq-server as installed). From the top of the tree (examples/README.md, "RabbitMQ"):

    python3 examples/rabbitmq/publish.py

prints:

    published 7 messages to inbox_examples.payments: pay-0001 to pay-0003 twice, pay-0004 malformed
"""

import json
import os

import pika

QUEUE = "inbox_examples.payments"
DEAD_LETTERS = "inbox_examples.payments.dead"

PAYMENTS = [
    ("pay-0001", {"account": "acct-1", "amount": "120.00"}),
    ("pay-0002", {"account": "acct-2", "amount": "75.50"}),
    ("pay-0003", {"account": "acct-1", "amount": "30.25"}),
]
MALFORMED = ("pay-0004", {"account": "acct-2", "amount": "twelve"})


def declare_queues(channel):
    """The queue, durable, whose rejected messages go to a dead-letter queue. The consumer
    declares them alike: whichever starts first creates them."""
    channel.queue_declare(DEAD_LETTERS, durable=True)
    channel.queue_declare(QUEUE, durable=True, arguments={
        "x-dead-letter-exchange": "", "x-dead-letter-routing-key": DEAD_LETTERS})


def main():
    url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/%2F")
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    declare_queues(channel)
    # Publisher confirms: basic_publish returns once the broker has the message (or raises).
    channel.confirm_delivery()
    # The message id is what the consumer's inbox keys on: the same payment, the same id.
    publications = PAYMENTS + PAYMENTS + [MALFORMED]
    for message_id, payment in publications:
        channel.basic_publish(
            exchange="", routing_key=QUEUE, body=json.dumps(payment),
            properties=pika.BasicProperties(message_id=message_id, content_type="application/json",
                                            delivery_mode=2))  # persistent
    connection.close()
    print(f"published {len(publications)} messages to {QUEUE}: "
          f"{PAYMENTS[0][0]} to {PAYMENTS[-1][0]} twice, {MALFORMED[0]} malformed")


if __name__ == "__main__":
    main()
