#!/usr/bin/python3
"""inbox-relay end to end: the outbox published to RabbitMQ and to an HTTP endpoint.

    relay_test.py --relay PATH --pghost DIR --amqp-port PORT --work DIR     (test/relay/run.sh)

A producer commits a few thousand messages with inbox.send and send_bytes (over several keys and
destinations, some without a key, with headers), and rolls some transactions back; two relays
publish them side by side, while the test injects faults, each while messages are pending:
  1. kill -9 of one relay, restarted at once (its leases expire; the others go on);
  2. an immediate restart of PostgreSQL (pg_ctl -m immediate restart);
  3. a restart of the RabbitMQ application (rabbitmqctl stop_app, start_app);
  4. SIGTERM of one relay: it must exit 0 and leave no message leased by it.
A message whose exchange does not exist is refused and retried (its attempts grow) until the
exchange is made; then it is delivered. The queues are read at the end. Asserted: every committed
message arrived at least once with message_id = its outbox id, its payload, content type,
persistence and headers; no rolled-back one arrived; within each key the first arrivals are in
commit order; every message is `delivered` in inbox.outbox.
Then the pipeline: while RabbitMQ blocks publishers (a memory alarm), a relay with batches of 5
has published one full batch and taken and published the next two while the first awaits its
confirms, and takes no fourth; when the alarm clears, each message arrives once.
Then the messages no queue is bound for: acked by the broker and delivered by a relay with the
default --unroutable drop; with --unroutable fail, returned (312 NO_ROUTE) and failed again and
again, never delivered, until a queue is bound; then it arrives once.
Then the HTTP sink against a recording endpoint that answers 500 to the first request of some
messages: every id arrives in Idempotency-Key, a 500 is retried and then done.
"""

import collections
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

from harness import (RELAY_ROLE, Relay, amqp_sink, create_database, declare_exchange, fail,
                     read_queue, restart_commands, restart_rabbitmq, scenario_parser,
                     seconds_left, start_clock, wait_for)

DEADLINE_SECONDS = 110  # the whole run; the suite must stay under two minutes
DATABASE = "relay_test"
DESTINATIONS = ("orders", "payments")
MISSING_EXCHANGE = "not_declared_yet"
KEYS_PER_DESTINATION = 20
KEYLESS_SHARE = 0.2
BYTES_SHARE = 0.05
ROLLED_BACK_SHARE = 0.1
PRODUCED_FIRST = 1200  # in transactions of 1 to 5 messages, while the relays run
PRODUCED_PER_FAULT = 800  # in one transaction, before each fault
FAULT_AFTER = 150  # deliveries after that commit, then the fault
PIPELINED = "pipelined"  # the destination of the pipeline's check
PIPELINED_BATCH = 5
BATCHES_IN_FLIGHT = 3  # to RabbitMQ (src/relay/amqp_sink.hpp, most_batches_in_flight)
UNROUTED_DROPPED = "unrouted_dropped"  # exchanges without a queue, until the test binds one
UNROUTED_FAILED = "unrouted_failed"
HTTP_MESSAGES = 60
HTTP_REFUSED_FIRST = 10  # messages whose first request the endpoint answers with 500


class Producer:
    """Sends messages with inbox.send / send_bytes, and remembers what committed."""

    def __init__(self, pghost, rng):
        self.conninfo = f"host={pghost} user=postgres dbname={DATABASE}"
        self.connection = psycopg.connect(self.conninfo)
        self.rng = rng
        self.counter = 0
        self.committed = {}  # id -> (destination, key, payload, headers)
        self.rolled_back = set()
        self.key_order = collections.defaultdict(list)  # (destination, key) -> ids, commit order

    def reconnect(self):
        """After the server's restart."""
        self.connection = psycopg.connect(self.conninfo)

    def message(self, destination=None):
        self.counter += 1
        destination = destination or self.rng.choice(DESTINATIONS)
        key = (None if self.rng.random() < KEYLESS_SHARE
               else f"key-{self.rng.randrange(KEYS_PER_DESTINATION)}")
        if self.rng.random() < BYTES_SHARE:
            payload = bytes([0, 255]) + self.rng.randbytes(16) + self.counter.to_bytes(4, "big")
        else:
            payload = {"n": self.counter, "key": key, "text": 'ünï "quoted" \\ ,:'}
        headers = ({"source": "relay-test", "n": self.counter, "urgent": self.counter % 2 == 0}
                   if self.counter % 3 else None)
        return destination, key, payload, headers

    def transaction(self, messages, commit, prepared=False):
        """prepared: as a transaction manager commits, in two phases (PREPARE TRANSACTION, then
        COMMIT PREPARED), which notifies nothing."""
        sent = []
        if prepared:
            self.counter += 1
            self.connection.tpc_begin(f"relay-test-{self.counter}")
        with self.connection.cursor() as cursor:
            for destination, key, payload, headers in messages:
                function = "send_bytes" if isinstance(payload, bytes) else "send"
                value = payload if isinstance(payload, bytes) else Jsonb(payload)
                cursor.execute(f"SELECT inbox.{function}(%s, %s, %s, %s)",
                               (destination, value, key, Jsonb(headers) if headers else None))
                sent.append((str(cursor.fetchone()[0]), (destination, key, payload, headers)))
        if commit and prepared:
            self.connection.tpc_prepare()
            self.connection.tpc_commit()
        elif commit:
            self.connection.commit()
        if commit:
            for message_id, message in sent:
                self.committed[message_id] = message
                if message[1] is not None:
                    self.key_order[(message[0], message[1])].append(message_id)
        else:
            self.connection.rollback()
            self.rolled_back.update(message_id for message_id, _ in sent)
        return [message_id for message_id, _ in sent]

    def many_transactions(self, count):
        """About count messages, 1 to 5 per transaction, some of them rolled back."""
        sent = 0
        while sent < count:
            size = self.rng.randint(1, 5)
            self.transaction([self.message() for _ in range(size)],
                             commit=self.rng.random() >= ROLLED_BACK_SHARE)
            sent += size

    def one_transaction(self, count):
        return self.transaction([self.message() for _ in range(count)], commit=True)


def fault_while_pending(db, after, what, inject):
    """Injects a fault once `after` more messages are delivered, checking that messages are
    still pending then (else the fault tests nothing)."""
    target = db.delivered() + after
    wait_for(f"{after} deliveries before {what}", lambda: db.delivered() >= target)
    pending = db.query("SELECT count(*) FROM inbox.outbox WHERE state <> 'delivered' "
                       "AND destination <> %s", (MISSING_EXCHANGE,))[0][0]
    if pending == 0:
        fail(f"every message was delivered before {what}: the fault came too late")
    inject()
    print(f"{what}, with {pending} messages pending", flush=True)


def all_delivered(db, producer):
    ids = list(producer.committed)
    return lambda: db.query("SELECT count(*) FROM inbox.outbox WHERE id = ANY(%s::uuid[]) "
                            "AND state = 'delivered'", (ids,))[0][0] == len(ids)


def expected_headers(headers):
    """The AMQP headers (and HTTP Inbox-Header-*) of a message: strings as they are, other JSON
    values as their JSON text."""
    return {name: value if isinstance(value, str) else json.dumps(value)
            for name, value in (headers or {}).items()}


def check_arrival(message_id, message, properties, body, problems):
    _, _, payload, headers = message
    if isinstance(payload, bytes):
        if body != payload or properties.content_type != "application/octet-stream":
            problems.append(f"{message_id}: bytes payload or content type differ")
    elif json.loads(body) != payload or properties.content_type != "application/json":
        problems.append(f"{message_id}: payload or content type differ: {body!r}")
    if properties.delivery_mode != 2:
        problems.append(f"{message_id}: not persistent")
    got = {name: value.decode() if isinstance(value, bytes) else value
           for name, value in (properties.headers or {}).items()}
    if got != expected_headers(headers):
        problems.append(f"{message_id}: headers {got}, expected {expected_headers(headers)}")


def check_amqp(args, db, producer, missing_id):
    problems = []
    copies = collections.Counter()
    first_arrivals = collections.defaultdict(list)
    for destination in (*DESTINATIONS, MISSING_EXCHANGE):
        for routing_key, properties, body in read_queue(args.amqp_port, destination):
            message_id = properties.message_id
            if message_id in producer.rolled_back:
                problems.append(f"{message_id} arrived, but its transaction rolled back")
                continue
            message = producer.committed.get(message_id)
            if message is None:
                problems.append(f"unknown message arrived: {message_id!r}")
                continue
            if (destination, routing_key) != (message[0], message[1] or ""):
                problems.append(f"{message_id} arrived via {destination}/{routing_key}")
            copies[message_id] += 1
            if copies[message_id] == 1:
                check_arrival(message_id, message, properties, body, problems)
                if message[1] is not None:
                    first_arrivals[(message[0], message[1])].append(message_id)
    missing = set(producer.committed) - set(copies)
    if missing:
        problems.append(f"{len(missing)} committed messages never arrived, e.g. {min(missing)}")
    for key, ids in producer.key_order.items():
        if first_arrivals[key] != ids:
            problems.append(f"key {key}: first arrivals out of commit order")
    states = dict(db.query("SELECT state, count(*) FROM inbox.outbox GROUP BY state"))
    if states != {"delivered": len(producer.committed)}:
        problems.append(f"inbox.outbox states {states}, expected all "
                        f"{len(producer.committed)} delivered")
    if copies[missing_id] != 1:
        problems.append(f"the message of the late exchange arrived {copies[missing_id]} times")
    if problems:
        fail("\n  ".join(problems[:20]))
    return sum(copies.values()) - len(copies)


def refused_again_and_again(db, message_id, reason, what):
    """Waits until the message was refused three times for the reason, and was never delivered
    nor dead meanwhile; returns its attempts and last error."""
    def refused():
        attempts, state, error = db.query("SELECT attempts, state, last_error "
                                          "FROM inbox.outbox WHERE id = %s", (message_id,))[0]
        if state in ("delivered", "dead"):
            fail(f"{what} is {state}")
        return attempts >= 3 and reason in (error or "")
    wait_for(f"{what} to be refused", refused)
    return db.query("SELECT attempts, last_error FROM inbox.outbox WHERE id = %s",
                    (message_id,))[0]


def check_pipeline(args, db, producer, rabbitmqctl):
    """Three batches in flight, never four. The broker blocks a publishing connection under a
    memory alarm, so the first batch's confirms do not come: the relay must have taken and sent
    the second and the third batch before it waits for them, and must wait for them before a
    fourth."""
    declare_exchange(args.amqp_port, PIPELINED)

    def memory_alarm(on):
        subprocess.run([*rabbitmqctl, "set_vm_memory_high_watermark", "0" if on else "0.4"],
                       check=True, stdout=subprocess.DEVNULL)
        wait_for(f"the memory alarm {'on' if on else 'off'}", lambda: on == (b"memory" in (
            subprocess.run([*rabbitmqctl, "eval", "rabbit_alarm:get_alarms()."], check=True,
                           stdout=subprocess.PIPE).stdout)))
    memory_alarm(True)
    relay = Relay(args, DATABASE, "relay-pipelined", amqp_sink(args.amqp_port, (PIPELINED,)),
                  ["--batch", str(PIPELINED_BATCH), "--lease", "60"])
    relay.start()
    try:
        # Without a key: every message can be leased at once.
        ids = producer.transaction([(PIPELINED, None, {"n": i}, None)
                                    for i in range((BATCHES_IN_FLIGHT + 2) * PIPELINED_BATCH)],
                                   commit=True)

        def leased():
            return db.value("SELECT count(*) FROM inbox.outbox WHERE destination = %s "
                            "AND state = 'leased'", (PIPELINED,))
        in_flight = BATCHES_IN_FLIGHT * PIPELINED_BATCH
        wait_for("three batches in flight while the broker blocks",
                 lambda: leased() >= in_flight)
        # None of them settled, and no fourth batch taken while the first awaits its confirms
        # (observed for a while: the relay would take it at once).
        observed_until = time.monotonic() + 1
        while time.monotonic() < observed_until:
            if leased() != in_flight or db.delivered_among(ids):
                fail(f"with the broker blocked: {leased()} leased, "
                     f"{db.delivered_among(ids)} delivered, expected {in_flight} and none")
            time.sleep(0.1)
        memory_alarm(False)
        wait_for("the pipelined messages to be delivered",
                 lambda: db.delivered_among(ids) == len(ids))
    finally:
        memory_alarm(False)
        if relay.stop(signal.SIGTERM) != 0:
            fail("the pipelined relay did not exit 0 on SIGTERM")
    arrived = collections.Counter(properties.message_id
                                  for _, properties, _ in read_queue(args.amqp_port, PIPELINED))
    if arrived != collections.Counter(ids):
        fail(f"the pipelined messages arrived {dict(arrived)}, expected each of {ids} once")


def check_unroutable(args, db, producer):
    """--unroutable: drop (the default) lets the broker ack and drop a message no queue is bound
    for, which is then delivered; fail publishes mandatory, and the broker's basic.return before
    the ack fails the message until a queue is bound."""
    for exchange in (UNROUTED_DROPPED, UNROUTED_FAILED):
        declare_exchange(args.amqp_port, exchange, queue=False)
    [dropped] = producer.transaction([(UNROUTED_DROPPED, None, {"n": 1}, None)], commit=True)
    [returned] = producer.transaction([(UNROUTED_FAILED, "k", {"n": 2}, None)], commit=True)
    relays = [Relay(args, DATABASE, "relay-drop", amqp_sink(args.amqp_port, (UNROUTED_DROPPED,))),
              Relay(args, DATABASE, "relay-fail", amqp_sink(args.amqp_port, (UNROUTED_FAILED,)),
                    ["--unroutable", "fail"])]
    for relay in relays:
        relay.start()
    try:
        wait_for("the message no queue is bound for to be delivered (dropped)",
                 lambda: db.delivered_among([dropped]) == 1)

        attempts, error = refused_again_and_again(db, returned, "312 NO_ROUTE",
                                                  "the message returned by the broker")
        declare_exchange(args.amqp_port, UNROUTED_FAILED)
        wait_for("the returned message to be delivered once a queue is bound",
                 lambda: db.delivered_among([returned]) == 1)
    finally:
        for relay in relays:
            if relay.stop(signal.SIGTERM) != 0:
                fail(f"{relay.name} did not exit 0 on SIGTERM")
    arrived = [properties.message_id
               for _, properties, _ in read_queue(args.amqp_port, UNROUTED_FAILED)]
    if arrived != [returned]:
        fail(f"the returned message arrived as {arrived}, expected {returned} once")
    return attempts, error


class Endpoint(http.server.BaseHTTPRequestHandler):
    """Records every POST; answers 500 to the first request of a message whose payload asks
    for it, 200 otherwise."""

    requests = []
    refused = set()

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        message_id = self.headers["Idempotency-Key"]
        refuse = b'"refuse_first": true' in body and message_id not in Endpoint.refused
        if refuse:
            Endpoint.refused.add(message_id)
        Endpoint.requests.append((self.path, dict(self.headers), body, 500 if refuse else 200))
        self.send_response(500 if refuse else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


def run_http(args, db, producer):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sent = {}
    for i in range(HTTP_MESSAGES):
        payload = {"n": i, "refuse_first": i < HTTP_REFUSED_FIRST}
        headers = {"trace": f"t-{i}", "n": i}
        key = f"hook-{i % 4}" if i % 5 else None
        [message_id] = producer.transaction([("webhooks", key, payload, headers)], commit=True)
        sent[message_id] = (payload, headers)
    relay = Relay(args, DATABASE, "relay-http",
                  ["--http", f"http://127.0.0.1:{server.server_port}/hooks/",
                   "--destinations", "webhooks"])
    relay.start()
    wait_for("the webhooks to be delivered", all_delivered(db, producer))
    if relay.stop(signal.SIGTERM) != 0:
        fail("the HTTP relay did not exit 0 on SIGTERM")
    server.shutdown()

    problems = []
    received = collections.defaultdict(list)
    for path, headers, body, status in Endpoint.requests:
        received[headers.get("Idempotency-Key")].append(status)
        message_id = headers.get("Idempotency-Key")
        if message_id not in sent:
            problems.append(f"request for an unknown id {message_id!r}")
            continue
        payload, message_headers = sent[message_id]
        expected = {f"Inbox-Header-{name}": value
                    for name, value in expected_headers(message_headers).items()}
        if (path != "/hooks/webhooks" or headers.get("Inbox-Message-Id") != message_id
                or json.loads(body) != payload
                or headers.get("Content-Type") != "application/json"
                or any(headers.get(name) != value for name, value in expected.items())):
            problems.append(f"{message_id}: request {path} {headers} {body!r}")
    rows = db.query("SELECT id::text, attempts, coalesce(last_error, '') FROM inbox.outbox "
                    "WHERE destination = 'webhooks' AND state = 'delivered'")
    if len(rows) != HTTP_MESSAGES:
        problems.append(f"{len(rows)} webhooks delivered, expected {HTTP_MESSAGES}")
    for message_id, attempts, last_error in rows:
        statuses = received[message_id]
        if sent[message_id][0]["refuse_first"]:
            if statuses[:1] != [500] or statuses[-1] != 200 or attempts < 2 or \
                    "HTTP 500" not in last_error:
                problems.append(f"{message_id}: refused once, then {statuses}, "
                                f"attempts {attempts}, last error {last_error!r}")
        elif 200 not in statuses:
            problems.append(f"{message_id}: never answered 200: {statuses}")
    if problems:
        fail("\n  ".join(problems[:20]))
    return len(Endpoint.requests), len(Endpoint.refused)


def main():
    parser = scenario_parser()
    args = parser.parse_args()
    started = time.monotonic()
    start_clock(DEADLINE_SECONDS)
    seed = int(os.environ.get("RELAY_SEED", random.SystemRandom().randrange(2**32)))
    print(f"seed {seed} (RELAY_SEED={seed} repeats this run)", flush=True)
    pg_restart, rabbitmqctl = restart_commands(args.work)

    db = create_database(args.pghost, DATABASE)
    # The message without an exchange is retried for the whole run, never dead.
    db.query(f"ALTER ROLE {RELAY_ROLE} SET inbox.outbox_max_attempts = 100000")
    for destination in DESTINATIONS:
        declare_exchange(args.amqp_port, destination)
    producer = Producer(args.pghost, random.Random(seed))
    [missing_id] = producer.transaction(
        [(MISSING_EXCHANGE, None, {"to": "an exchange made later"}, None)], commit=True)
    # Not awaited until its exchange is made.
    missing_message = producer.committed.pop(missing_id)
    sink = amqp_sink(args.amqp_port, (*DESTINATIONS, MISSING_EXCHANGE))
    relays = [Relay(args, DATABASE, f"relay-{i}", sink) for i in (1, 2)]
    for relay in relays:
        relay.start()
    try:
        # Side by side, woken by the producer's commits, roll-backs among its transactions.
        producer.many_transactions(PRODUCED_FIRST)
        wait_for("the first messages to be delivered", all_delivered(db, producer))
        # A transaction prepared and committed later (two-phase commit): no notification comes
        # of it, and the relays, idle, find its messages when they look at the outbox anyway.
        producer.transaction([producer.message() for _ in range(5)], commit=True, prepared=True)
        wait_for("the messages of a prepared transaction to be delivered",
                 all_delivered(db, producer))

        # 1. to 3. each while a large transaction's messages are going out.
        victim = relays[0]

        def kill_and_restart():
            victim.process.send_signal(signal.SIGKILL)
            if victim.process.wait() != -signal.SIGKILL:
                fail("the relay did not die of SIGKILL")
            victim.start()
        producer.one_transaction(PRODUCED_PER_FAULT)
        fault_while_pending(db, FAULT_AFTER, "relay-1 killed (kill -9) and restarted",
                            kill_and_restart)
        wait_for("delivery after the kill", all_delivered(db, producer))

        producer.one_transaction(PRODUCED_PER_FAULT)
        fault_while_pending(db, FAULT_AFTER, "PostgreSQL restarted (immediate)",
                            lambda: subprocess.run(pg_restart, check=True,
                                                   stdout=subprocess.DEVNULL))
        wait_for("delivery after the PostgreSQL restart", all_delivered(db, producer))

        producer.reconnect()
        producer.one_transaction(PRODUCED_PER_FAULT)

        fault_while_pending(db, FAULT_AFTER, "RabbitMQ restarted (stop_app, start_app)",
                            lambda: restart_rabbitmq(rabbitmqctl))
        wait_for("delivery after the RabbitMQ restart", all_delivered(db, producer))

        # The message without an exchange is refused again and again, never done.
        attempts, error = refused_again_and_again(db, missing_id, "404 NOT_FOUND",
                                                  "the message without an exchange")
        declare_exchange(args.amqp_port, MISSING_EXCHANGE)
        producer.committed[missing_id] = missing_message
        print(f"the message without an exchange was refused {attempts} times ({error}); "
              "exchange declared", flush=True)

        # 4. SIGTERM while a batch is in flight: exit 0, nothing left leased by it.
        producer.one_transaction(PRODUCED_PER_FAULT)
        stopped = relays[1]
        fault_while_pending(db, FAULT_AFTER, "relay-2 stopped (SIGTERM)",
                            lambda: stopped.process.send_signal(signal.SIGTERM))
        status = stopped.process.wait(timeout=seconds_left())
        held = db.query("SELECT count(*) FROM inbox.outbox_messages WHERE leased_by = %s",
                        (stopped.name,))[0][0]
        if status != 0 or held != 0 or not stopped.lines()[-1].endswith("stopped"):
            fail(f"relay-2 after SIGTERM: exit status {status}, {held} messages still leased "
                 f"by it, last line {stopped.lines()[-1:]}")
        wait_for("the rest to be delivered by relay-1", all_delivered(db, producer))
        if victim.stop(signal.SIGTERM) != 0:
            fail("relay-1 did not exit 0 on SIGTERM")

        resends = check_amqp(args, db, producer, missing_id)
        batch_lines = sum(1 for relay in relays for line in relay.lines()
                          if line.startswith("published ") and "lag: " in line)
        print(f"AMQP: {len(producer.committed)} messages committed, {len(producer.rolled_back)} "
              f"rolled back (never published), {resends} resends; faults: 1 kill -9, 1 "
              f"PostgreSQL restart, 1 RabbitMQ restart, 1 SIGTERM; {batch_lines} batch lines "
              "with the lag", flush=True)
        check_pipeline(args, db, producer, rabbitmqctl)
        print(f"pipeline: {BATCHES_IN_FLIGHT * PIPELINED_BATCH} messages in flight in three "
              f"batches of {PIPELINED_BATCH} while the broker blocked, no fourth batch; each "
              "delivered once", flush=True)
        attempts, error = check_unroutable(args, db, producer)
        print(f"unroutable: dropped and delivered by default; with --unroutable fail returned "
              f"and failed {attempts} times ({error}), then delivered once a queue was bound",
              flush=True)
        requests, refused = run_http(args, db, producer)
        print(f"HTTP: {HTTP_MESSAGES} messages, {requests} requests, {refused} answered 500 "
              "and retried", flush=True)
    finally:
        for relay in relays:
            if relay.process.poll() is None:
                relay.process.kill()
                relay.process.wait()
    print(f"ok in {time.monotonic() - started:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
