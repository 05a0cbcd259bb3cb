#!/usr/bin/env python3
"""Publishes payments to a RabbitMQ stream queue, with publisher confirms (pika; Debian:
python3-pika). Payment i is always the same message: pay-000i, to acct-1 when i is odd and acct-2
when it is even, of i * 12.50. The stream gives each message the next offset: 0 for the first.
examples/rabbitmq/stream_consumer.py applies them.

    stream_publish.py FIRST LAST      payments FIRST to LAST

The broker: AMQP_URL (by default amqp://guest:guest@localhost:5672/%2F, Debian's
rabbitmq-server as installed). From the top of the tree (examples/README.md, "RabbitMQ
streams"):

    python3 examples/rabbitmq/stream_publish.py 1 4
    python3 examples/rabbitmq/stream_publish.py 5 6

print:

    published pay-0001 to pay-0004 to the stream inbox_examples.payment_stream
    published pay-0005 to pay-0006 to the stream inbox_examples.payment_stream
"""

import argparse
import json
import os

import pika

QUEUE = "inbox_examples.payment_stream"


def declare_stream(channel):
    """A stream queue: durable, its messages kept (not removed when acked) at offsets 0, 1, 2...
    The consumer declares it alike: whichever starts first creates it."""
    channel.queue_declare(QUEUE, durable=True, arguments={"x-queue-type": "stream"})


def payment(number):
    cents = number * 1250
    return (f"pay-{number:04d}",
            {"account": f"acct-{2 - number % 2}", "amount": f"{cents // 100}.{cents % 100:02d}"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", type=int)
    parser.add_argument("last", type=int)
    args = parser.parse_args()
    url = os.environ.get("AMQP_URL", "amqp://guest:guest@localhost:5672/%2F")
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    declare_stream(channel)
    # Publisher confirms: basic_publish returns once the stream has the message (or raises), so
    # the messages are in the stream, in this order, when this prints.
    channel.confirm_delivery()
    for message_id, body in map(payment, range(args.first, args.last + 1)):
        channel.basic_publish(
            exchange="", routing_key=QUEUE, body=json.dumps(body), mandatory=True,
            properties=pika.BasicProperties(message_id=message_id, content_type="application/json",
                                            delivery_mode=2))  # persistent
    connection.close()
    print(f"published {payment(args.first)[0]} to {payment(args.last)[0]} to the stream {QUEUE}")


if __name__ == "__main__":
    main()
