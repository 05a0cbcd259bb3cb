#!/usr/bin/python3
"""End to end through RabbitMQ: payments delivered at least once, applied exactly once.

    payments.py run --amqp-port PORT --work DIR       the whole test (PG* variables: the database)
    payments.py consume --amqp-port PORT --work DIR --index I    one consumer (started by run)

run publishes a few thousand payments (about 10% of them twice, as a producer retrying after a
lost confirm) to a private RabbitMQ node while several consumer processes work the queue with
manual acks. Each consumer receives a delivery with the inbox (inbox.receive) and applies the
payment to an accounts table in ONE transaction, commits, then acks. Some deliveries are nacked with requeue
after the commit, so that they come back as duplicates; one consumer is killed with SIGKILL
between claim and commit, so that its messages come back to the others.

The assertions: every distinct payment applied exactly once (ledger, balances, markers), exactly
one "processed" answer per payment over all consumers, and inbox.stats equal to what the
consumers were told.
"""

import argparse
import collections
import decimal
import json
import os
import random
import signal
import subprocess
import sys
import time

import pika
import psycopg
import psycopg.errors
from psycopg.types.json import Jsonb

CONSUMER = "payments"  # the inbox consumer: one subscriber, run as several instances
QUEUE = "payments"
PAYMENTS = 3000
ACCOUNTS = 20
COPIED_SHARE = 0.10  # payments the producer publishes twice
NACKED_SHARE = 0.05  # deliveries nacked (requeue) after their commit
CONSUMERS = 4
PREFETCH = 10
IDLE_EXIT_SECONDS = 2.0  # once draining: a consumer with nothing to do for this long exits
DEADLINE_SECONDS = 100  # the whole run; the suite must stay well under two minutes

# Headers the test sets on published messages to steer consumers deterministically.
STALL_HEADER = "x-test-stall-in-transaction"
NACK_HEADER = "x-test-nack-after-commit"


# ---------------------------------------------------------------------------- the consumer


def receive(cur, message_id, payment):
    """The one inbox call: the delivery's outcome, "processed" (first delivery: do the work in
    this transaction) or "duplicate". The payload's fingerprint is kept with the marker, so a
    copy whose body differed would be "payload_mismatch"."""
    cur.execute("SELECT (inbox.receive(%s, %s, %s)).outcome", (CONSUMER, message_id, Jsonb(payment)))
    outcome = cur.fetchone()[0]
    if outcome not in ("processed", "duplicate"):
        raise RuntimeError(f"{message_id}: unexpected outcome {outcome}")
    return outcome


def apply_payment(cur, message_id, payment):
    cur.execute("UPDATE accounts SET balance = balance + %s WHERE id = %s",
                (payment["amount"], payment["account"]))
    if cur.rowcount != 1:
        raise RuntimeError(f"no account {payment['account']!r}")
    cur.execute("INSERT INTO payments (message_id, account, amount) VALUES (%s, %s, %s)",
                (message_id, payment["account"], payment["amount"]))


class Report:
    """What this consumer was told, one line per event, written straight to the file so that a
    SIGKILL loses nothing that had been reported."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, event, message_id=""):
        os.write(self.fd, f"{event} {message_id}\n".encode())


def consume(args):
    report = Report(os.path.join(args.work, f"consumer-{args.index}.events"))
    conn = psycopg.connect(autocommit=True, application_name=f"payments-consumer-{args.index}")
    cur = conn.cursor()
    amqp = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", args.amqp_port))
    channel = amqp.channel()
    channel.basic_qos(prefetch_count=PREFETCH)
    draining = os.path.join(args.work, "draining")
    last_delivery = time.monotonic()
    report("ready")
    for method, properties, body in channel.consume(QUEUE, inactivity_timeout=0.2):
        if method is None:
            if os.path.exists(draining) and time.monotonic() - last_delivery > IDLE_EXIT_SECONDS:
                break
            continue
        last_delivery = time.monotonic()
        message_id = properties.message_id
        payment = json.loads(body)
        headers = properties.headers or {}
        stall = headers.get(STALL_HEADER) and not method.redelivered

        # One transaction: claim, work, commit; retried whole on serialization failures and
        # deadlocks, as any transaction must be.
        for attempt in range(10):
            try:
                with conn.transaction():
                    first = receive(cur, message_id, payment) == "processed"
                    if first:
                        apply_payment(cur, message_id, payment)
                        if stall:
                            # The point between claim and commit, where the run kills us.
                            report("stalled", message_id)
                            time.sleep(600)
                break
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                report("retry", message_id)
        else:
            raise RuntimeError(f"{message_id}: gave up after 10 attempts")

        # Counted after the commit: a claim that never committed was never "processed"
        # (inbox.stats counts applied at commit). A "duplicate" answer is counted by inbox.stats
        # when given; here nothing follows it but the commit, so the two agree.
        report("processed" if first else "duplicate", message_id)
        if headers.get(NACK_HEADER) and not method.redelivered:
            channel.basic_nack(method.delivery_tag, requeue=True)
            report("nacked", message_id)
        else:
            channel.basic_ack(method.delivery_tag)
            report("acked", message_id)
    channel.cancel()
    amqp.close()
    conn.close()
    report("exited")


# ---------------------------------------------------------------------------- the run


def fail(message):
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def make_payments(rng):
    payments = []
    for _ in range(PAYMENTS):
        message_id = "pay-%032x" % rng.getrandbits(128)
        payments.append((message_id, {
            "account": f"acct-{rng.randrange(ACCOUNTS):02d}",
            "amount": str(decimal.Decimal(rng.randrange(1, 50000)) / 100),
        }))
    return payments


def make_publications(rng, payments):
    """The order of publication, as (message_id, payment, headers): every payment once, a share
    of them twice (half right behind the first copy, so that two consumers hold them at once;
    half later), one payment flagged to stall its consumer inside the transaction, and a share
    of the publications flagged to be nacked after their commit."""
    published = [(message_id, payment) for message_id, payment in payments]
    copied = rng.sample(range(1, PAYMENTS), int(PAYMENTS * COPIED_SHARE))
    for k, i in enumerate(sorted(copied, reverse=True)):
        at = i + 1 if k % 2 == 0 else rng.randrange(i + 1, len(published) + 1)
        published.insert(at, payments[i])
    copied_ids = {payments[i][0] for i in copied}
    # The stall happens early enough that the consumer has done work before it and the others
    # have work after it; never on a copied payment, so that no second copy stalls too.
    stall_id = next(m for m, _ in published[len(published) // 5:] if m not in copied_ids)
    publications = []
    for message_id, payment in published:
        headers = {}
        if message_id == stall_id:
            headers[STALL_HEADER] = True
        elif rng.random() < NACKED_SHARE:
            headers[NACK_HEADER] = True
        publications.append((message_id, payment, headers))
    return publications, len(copied), stall_id


def read_events(work, index):
    try:
        with open(os.path.join(work, f"consumer-{index}.events")) as f:
            return [line.split() + [""] * (2 - len(line.split())) for line in f]
    except FileNotFoundError:
        return []


def wait_for(what, predicate, deadline):
    while not predicate():
        if time.monotonic() > deadline:
            fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def run(args):
    started = time.monotonic()
    deadline = started + DEADLINE_SECONDS
    seed = int(os.environ.get("PAYMENTS_SEED", random.SystemRandom().randrange(2**32)))
    print(f"seed {seed} (PAYMENTS_SEED={seed} repeats this run)", flush=True)
    rng = random.Random(seed)
    payments = make_payments(rng)
    publications, copies, stall_id = make_publications(rng, payments)
    nack_flags = sum(1 for _, _, h in publications if NACK_HEADER in h)
    print(f"{PAYMENTS} payments, {len(publications)} publications ({copies} producer copies, "
          f"{nack_flags} flagged for a nack), {CONSUMERS} consumers", flush=True)

    db = psycopg.connect(autocommit=True)
    db.execute("CREATE EXTENSION inbox")
    db.execute("CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL DEFAULT 0)")
    # The ledger has no unique constraint on purpose: a payment applied twice must show as two
    # rows, not as an error that a retry would paper over.
    db.execute("CREATE TABLE payments (message_id text NOT NULL, account text NOT NULL, "
               "amount numeric NOT NULL)")
    db.execute("INSERT INTO accounts (id) SELECT format('acct-%%s', lpad(i::text, 2, '0')) "
               "FROM generate_series(0, %s) AS i", (ACCOUNTS - 1,))

    amqp = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", args.amqp_port))
    channel = amqp.channel()
    channel.queue_declare(QUEUE, durable=True)
    channel.confirm_delivery()

    consumers = {}
    try:
        for i in range(CONSUMERS):
            consumers[i] = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "consume", "--amqp-port",
                 str(args.amqp_port), "--work", args.work, "--index", str(i)])
        wait_for("the consumers to start",
                 lambda: all(read_events(args.work, i)[:1] == [["ready", ""]]
                             for i in consumers), deadline)

        # Persistent messages with publisher confirms: each publish returns once the broker
        # has taken the message, so every publication is in the queue when the loop ends.
        for message_id, payment, headers in publications:
            channel.basic_publish("", QUEUE, json.dumps(payment), pika.BasicProperties(
                message_id=message_id, delivery_mode=2, headers=headers), mandatory=True)
        print(f"published in {time.monotonic() - started:.1f} s", flush=True)

        # The consumer that got the flagged payment stalls between claim and commit: check that
        # its transaction is open and holds the uncommitted payment, then kill it.
        def stalled():
            return [i for i in consumers
                    if ["stalled", stall_id] in read_events(args.work, i)]
        wait_for("a consumer to stall in its transaction", stalled, deadline)
        victim = stalled()[0]
        state = db.execute("SELECT state FROM pg_stat_activity WHERE application_name = %s",
                           (f"payments-consumer-{victim}",)).fetchall()
        if state != [("idle in transaction",)]:
            fail(f"consumer {victim} stalled but its session is {state}, not in a transaction")
        if db.execute("SELECT count(*) FROM payments WHERE message_id = %s",
                      (stall_id,)).fetchone()[0] != 0:
            fail("the stalled payment is visible before its commit")
        consumers[victim].send_signal(signal.SIGKILL)
        if consumers[victim].wait() != -signal.SIGKILL:
            fail(f"consumer {victim} did not die of SIGKILL")
        print(f"consumer {victim} killed between claim and commit of {stall_id}", flush=True)

        # Drain: the live consumers exit once the queue has had nothing for them for a while.
        open(os.path.join(args.work, "draining"), "w").close()
        for i, process in consumers.items():
            if i != victim:
                process.wait(timeout=max(1, deadline - time.monotonic()))
                if process.returncode != 0:
                    fail(f"consumer {i} exited with {process.returncode}")
    except subprocess.TimeoutExpired:
        fail("the consumers did not drain the queue in time")
    finally:
        for process in consumers.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    # Every consumer's connection is closed, so anything unacknowledged is back in the queue.
    left = channel.queue_declare(QUEUE, durable=True, passive=True).method.message_count
    amqp.close()
    check(args, db, payments, publications, copies, stall_id, victim, left)
    print(f"ok in {time.monotonic() - started:.1f} s", flush=True)


def check(args, db, payments, publications, copies, stall_id, victim, left):
    problems = []
    if left:
        problems.append(f"{left} messages left in the queue")

    events = collections.Counter()
    processed_by = collections.defaultdict(list)
    for i in range(CONSUMERS):
        mine = collections.Counter()
        for event, message_id in read_events(args.work, i):
            mine[event] += 1
            if event == "processed":
                processed_by[message_id].append(i)
        events.update(mine)
        print(f"consumer {i}: " + ", ".join(f"{mine[e]} {e}" for e in
              ("processed", "duplicate", "nacked", "acked", "retry", "stalled")), flush=True)
        if mine["processed"] == 0:
            problems.append(f"consumer {i} processed nothing")
        if i != victim and mine["exited"] != 1:
            problems.append(f"consumer {i} did not exit cleanly")

    # The consumers' own answers: one "processed" per payment, and none other.
    ids = {message_id for message_id, _ in payments}
    twice = {m: who for m, who in processed_by.items() if len(who) > 1}
    if twice:
        problems.append(f"{len(twice)} payments processed more than once, e.g. {next(iter(twice.items()))}")
    if set(processed_by) != ids:
        problems.append(f"{len(ids - set(processed_by))} payments never processed, "
                        f"{len(set(processed_by) - ids)} unknown ones processed")
    if not processed_by.get(stall_id):
        problems.append("the stalled payment was not processed by another consumer")
    # Every producer copy and every nacked delivery is one more delivery of a payment already
    # committed: at least that many duplicates (more come from the killed consumer's unacked
    # messages that it had committed).
    if events["duplicate"] < copies + events["nacked"]:
        problems.append(f"{events['duplicate']} duplicates, fewer than {copies} producer copies "
                        f"+ {events['nacked']} nacked deliveries")

    # The database: each payment in the ledger once, balances equal to the distinct payments.
    count, distinct = db.execute(
        "SELECT count(*), count(DISTINCT message_id) FROM payments").fetchone()
    if (count, distinct) != (PAYMENTS, PAYMENTS):
        problems.append(f"ledger has {count} rows for {distinct} payments, expected {PAYMENTS}")
    expected = {f"acct-{a:02d}": decimal.Decimal(0) for a in range(ACCOUNTS)}
    for _, payment in payments:
        expected[payment["account"]] += decimal.Decimal(payment["amount"])
    balances = dict(db.execute("SELECT id, balance FROM accounts").fetchall())
    if balances != expected:
        wrong = {a: (balances.get(a), e) for a, e in expected.items() if balances.get(a) != e}
        problems.append(f"balances (found, expected) differ from the distinct payments: {wrong}")
    markers = db.execute("SELECT count(*) FROM inbox.messages WHERE consumer = %s",
                         (CONSUMER,)).fetchone()[0]
    if markers != PAYMENTS:
        problems.append(f"{markers} markers, expected {PAYMENTS}")

    # inbox.stats against what the consumers were told.
    stats = db.execute("SELECT applied, duplicates FROM inbox.stats WHERE consumer = %s",
                       (CONSUMER,)).fetchone()
    told = (events["processed"], events["duplicate"])
    print(f"inbox.stats applied, duplicates = {stats}; the consumers were told {told}",
          flush=True)
    if stats != told:
        problems.append(f"inbox.stats (applied, duplicates) = {stats}, consumers counted {told}")

    if problems:
        fail("; ".join(problems))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("run", "consume"))
    parser.add_argument("--amqp-port", type=int, required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--index", type=int)
    args = parser.parse_args()
    if args.command == "consume":
        consume(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
