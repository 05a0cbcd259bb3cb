#!/usr/bin/python3
"""Streams end to end with a real log: payments in RabbitMQ stream queues, each applied exactly
once by consumers that claim its offset with inbox.claim_position and resume from
inbox.stream_position, through kill -9 and restarts.

    stream_test.py --relay PATH --pghost DIR --amqp-port PORT --work DIR     (test/relay/run.sh;
                                                                       no relay takes part)
    stream_test.py consume --partition P --slot S [--from OFFSET] ...   one consumer process

  producer: payments (a unique id, an account, an amount) published with publisher confirms to
    PARTITIONS stream queues (durable, x-queue-type stream), `payments.P` chosen by the account;
  consumers, one per partition, as role stream_consumer ('consume' access): at start,
    inbox.stream_position('ledger', 'payments/P') and basic.consume with prefetch and
    x-stream-offset = that position + 1 ('first' when NULL); per delivery ONE transaction:
    inbox.claim_position('ledger', 'payments/P', the delivery's x-stream-offset header) and, when
    next, the payment's effect (a ledger row, the account credited); COMMIT; then the ack.

Faults, in a seeded random order, each on a partition that has made progress and still has
payments to go: kill -9 of a consumer; a consumer that kills itself (SIGKILL) after its effect
and before COMMIT, and one between COMMIT and ack; an immediate restart of PostgreSQL; a restart
of the RabbitMQ application; a consumer resumed from a stale offset, STALE_BY behind the committed
position (as from offsets kept by the broker, which lag); a rebalance overlap: a second consumer
of the same stream while the first still runs, both handed the same offsets, until they have
claimed OVERLAP_SHARED offsets in common, then the first is revoked (kill -9). What dies is
restarted, from the committed position + 1.
Asserted: the ledger (no unique constraint) has each published payment exactly once, at the
stream and offset it was published to, none missing; every balance is the sum of its payments;
each stream's position is the offset of its last payment; the stale resume and the overlap
delivered offsets already claimed. Printed: the figures, and the duplicates that claim_position
absorbed.
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pika
import pika.exceptions
import psycopg

from harness import (Database, EventLog, amqp_connection, claim_flag, connect_when_up, fail,
                     read_events, restart_commands, restart_rabbitmq, scenario_parser, start_clock,
                     wait_for)

DEADLINE_SECONDS = 150  # the whole run, under load; it takes about 30 s on two busy cores
DATABASE = "stream_test"
CONSUMER = "ledger"
CONSUMER_ROLE = "stream_consumer"
PARTITIONS = 3
ACCOUNTS = 12  # account i goes to partition i % PARTITIONS
PAYMENTS_FIRST = 600
PAYMENTS_PER_FAULT = 150
FEED = 150  # more payments for a partition that drained while a fault waited for progress
FAULT_AFTER = 30  # offsets committed after the producer's last payments, then the fault
PREFETCH = 50  # RabbitMQ requires a prefetch of a stream's consumers
STALE_BY = 100
OVERLAP_SHARED = 30
IDLE_EXIT_SECONDS = 1.0  # once draining: a consumer with nothing to do for this long exits
EXIT_RECONNECT = 75  # a consumer that lost PostgreSQL or RabbitMQ exits with it, to be restarted

SCHEMA = f"""
CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
-- No unique constraint, on purpose: a payment applied twice shows as two rows.
CREATE TABLE ledger (payment text NOT NULL, account text NOT NULL, amount bigint NOT NULL,
                     stream text NOT NULL, stream_offset bigint NOT NULL);
CREATE FUNCTION apply_payment(stream text, stream_offset bigint, payment jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accounts SET balance = balance + (payment->>'amount')::bigint
    WHERE id = payment->>'account';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no account %', payment->>'account';
    END IF;
    INSERT INTO ledger VALUES (payment->>'id', payment->>'account',
                               (payment->>'amount')::bigint, stream, stream_offset);
END $$;
CREATE ROLE {CONSUMER_ROLE} LOGIN;
SELECT inbox.grant_access('{CONSUMER_ROLE}', 'consume');
GRANT SELECT, UPDATE ON accounts TO {CONSUMER_ROLE};
GRANT INSERT ON ledger TO {CONSUMER_ROLE};
"""


def queue_name(partition):
    return f"payments.{partition}"


def stream_name(partition):
    return f"payments/{partition}"


def events_path(work, partition, slot):
    return os.path.join(work, f"stream-consumer-{partition}-{slot}.events")


def die_flag(work, partition, when):
    """The file that asks a consumer of the partition to kill itself at its next next claim,
    when: before-commit or after-commit."""
    return os.path.join(work, f"die-{when}-{partition}")


def draining_flag(work):
    return os.path.join(work, "streams-draining")


# ---------------------------------------------------------------------------- a consumer


def consume(args):
    stream = stream_name(args.partition)
    log = EventLog(events_path(args.work, args.partition, args.slot))
    conninfo = f"host={args.pghost} user={CONSUMER_ROLE} dbname={DATABASE}"
    try:
        db = connect_when_up(lambda: psycopg.connect(conninfo, autocommit=True),
                             psycopg.OperationalError)
        if args.start_from is None:
            position = db.execute("SELECT inbox.stream_position(%s, %s)",
                                  (CONSUMER, stream)).fetchone()[0]
            start = "first" if position is None else position + 1
            log("resume", str(start), "committed")
        else:
            start = args.start_from
            log("resume", str(start), "stale")
        amqp = connect_when_up(lambda: amqp_connection(args.amqp_port),
                               pika.exceptions.AMQPConnectionError)
        channel = amqp.channel()
        channel.basic_qos(prefetch_count=PREFETCH)
        last_delivery = time.monotonic()
        for method, properties, body in channel.consume(
                queue_name(args.partition), arguments={"x-stream-offset": start},
                inactivity_timeout=0.1):
            if method is None:
                if (os.path.exists(draining_flag(args.work))
                        and time.monotonic() - last_delivery > IDLE_EXIT_SECONDS):
                    break
                continue
            last_delivery = time.monotonic()
            offset = properties.headers["x-stream-offset"]
            with db.transaction():
                answer = db.execute("SELECT inbox.claim_position(%s, %s, %s)",
                                    (CONSUMER, stream, offset)).fetchone()[0]
                if answer == "next":
                    db.execute("SELECT apply_payment(%s, %s, %s)",
                               (stream, offset, body.decode()))
                    if claim_flag(die_flag(args.work, args.partition, "before-commit")):
                        log("killed-before-commit", str(offset))
                        os.kill(os.getpid(), signal.SIGKILL)
            log(answer, str(offset))
            if answer == "next" and claim_flag(die_flag(args.work, args.partition,
                                                        "after-commit")):
                log("killed-after-commit", str(offset))
                os.kill(os.getpid(), signal.SIGKILL)
            channel.basic_ack(method.delivery_tag)
        channel.cancel()
        amqp.close()
        db.close()
    except (psycopg.OperationalError, pika.exceptions.AMQPError) as error:
        log("lost-connection", type(error).__name__)
        sys.exit(EXIT_RECONNECT)
    log("exited")


# ---------------------------------------------------------------------------- the run


class Producer:
    """Publishes payments with confirms, and remembers where each went: the offset a stream
    gives its messages is their count before it."""

    def __init__(self, amqp_port, rng):
        self.amqp_port = amqp_port
        self.rng = rng
        self.published = [0] * PARTITIONS
        self.payments = {}  # id -> (account, amount, stream, offset)
        self.channel = None
        self.connect()

    def connect(self):
        """Also after RabbitMQ's restart, once the streams are back."""
        def open_channel():
            channel = amqp_connection(self.amqp_port).channel()
            channel.confirm_delivery()
            for partition in range(PARTITIONS):
                channel.queue_declare(queue_name(partition), durable=True,
                                      arguments={"x-queue-type": "stream"})
            return channel
        self.channel = connect_when_up(open_channel, pika.exceptions.AMQPError)

    def publish(self, count, partition=None):
        """count payments, to one partition or to any."""
        for _ in range(count):
            if partition is None:
                account_number = self.rng.randrange(ACCOUNTS)
            else:
                account_number = partition + PARTITIONS * self.rng.randrange(
                    ACCOUNTS // PARTITIONS)
            target = account_number % PARTITIONS
            payment = {"id": f"pay-{len(self.payments) + 1:05d}",
                       "account": f"acct-{account_number:02d}",
                       "amount": self.rng.randrange(1, 100000)}
            # A payment not confirmed raises: the test fails rather than publish it twice.
            self.channel.basic_publish(
                "", queue_name(target), json.dumps(payment),
                pika.BasicProperties(message_id=payment["id"], delivery_mode=2,
                                     content_type="application/json"), mandatory=True)
            self.payments[payment["id"]] = (payment["account"], payment["amount"],
                                            stream_name(target), self.published[target])
            self.published[target] += 1


class Consumers:
    """The consumer processes, by (partition, slot); supervise() restarts the ones that died."""

    def __init__(self, args):
        self.args = args
        self.processes = {}
        self.next_slot = [0] * PARTITIONS
        self.restarts = 0

    def start(self, partition, slot=None, start_from=None):
        if slot is None:
            slot = self.next_slot[partition]
            self.next_slot[partition] += 1
        command = [sys.executable, os.path.abspath(__file__), "consume",
                   "--partition", str(partition), "--slot", str(slot),
                   "--pghost", self.args.pghost, "--amqp-port", str(self.args.amqp_port),
                   "--work", self.args.work]
        if start_from is not None:
            command += ["--from", str(start_from)]
        self.processes[(partition, slot)] = subprocess.Popen(command)
        return slot

    def supervise(self):
        """Restarts a consumer killed or cut off; any other exit fails the test, but that of a
        consumer told to drain."""
        for (partition, slot), process in self.processes.items():
            status = process.poll()
            if status is None or (status == 0 and os.path.exists(draining_flag(self.args.work))):
                continue
            if status not in (-signal.SIGKILL, EXIT_RECONNECT):
                fail(f"the consumer of partition {partition} (slot {slot}) exited with {status}")
            self.restarts += 1
            self.start(partition, slot)

    def slots(self, partition):
        return [slot for (p, slot) in self.processes if p == partition]

    def kill(self, partition, slot):
        process = self.processes[(partition, slot)]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def retire(self, partition, slot):
        self.kill(partition, slot)
        del self.processes[(partition, slot)]

    def drain(self):
        """Tells the consumers to exit once idle; returns the condition that they all have."""
        open(draining_flag(self.args.work), "w").close()
        return lambda: all(process.poll() == 0 for process in self.processes.values())

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def events(self, partition, slot):
        return read_events(events_path(self.args.work, partition, slot))


def set_up(args):
    admin = Database(args.pghost, "postgres")
    admin.query(f"CREATE DATABASE {DATABASE}")
    db = Database(args.pghost, DATABASE)
    db.query("CREATE EXTENSION inbox")
    db.query(SCHEMA)
    db.query("INSERT INTO accounts (id) SELECT format('acct-%%s', lpad(i::text, 2, '0')) "
             "FROM generate_series(0, %s) AS i", (ACCOUNTS - 1,))
    return db


def fault_plan(rng):
    plan = ["consumer kill -9", "consumer kill -9", "consumer killed before COMMIT",
            "consumer killed between COMMIT and ack", "PostgreSQL immediate restart",
            "RabbitMQ restart", "stale resume", "rebalance overlap"]
    rng.shuffle(plan)
    return plan


class Run:
    def __init__(self, args, seed):
        self.args = args
        self.rng = random.Random(seed)
        self.db = set_up(args)
        self.producer = Producer(args.amqp_port, self.rng)
        self.consumers = Consumers(args)
        self.pg_restart, self.rabbitmqctl = restart_commands(args.work)
        self.faults = collections.Counter()
        self.overlaps = []  # (partition, revoked slot, newcomer's slot, offsets claimed by both)

    def committed(self, partition):
        """How many offsets of the partition are behind its committed position."""
        position = self.db.value("SELECT inbox.stream_position(%s, %s)",
                                 (CONSUMER, stream_name(partition)))
        return 0 if position is None else position + 1

    def progress(self, partitions):
        """(offsets committed, offsets still to go) over the partitions."""
        done = sum(self.committed(p) for p in partitions)
        return done, sum(self.producer.published[p] for p in partitions) - done

    def until(self, what, predicate):
        """wait_for, restarting the consumers that die meanwhile."""
        wait_for(what, lambda: self.consumers.supervise() or predicate())

    def feed_if_drained(self, partitions):
        """More payments when the partitions have none left to go; never the end of a wait."""
        if self.progress(partitions)[1] <= 0:
            for partition in partitions:
                self.producer.publish(FEED, partition)
        return False

    def run(self):
        for partition in range(PARTITIONS):
            self.consumers.start(partition)
        try:
            self.producer.publish(PAYMENTS_FIRST)
            for fault in fault_plan(self.rng):
                self.producer.publish(PAYMENTS_PER_FAULT)
                self.inject(fault)
            self.finish()
        finally:
            self.consumers.stop()

    def inject(self, fault):
        """The fault, once the partitions it hits have made progress since the producer's last
        payments and still have payments to go (else the fault would test nothing): partitions
        that drained meanwhile, however fast or slow this machine is, are fed more."""
        restart = fault.endswith("restart")
        partitions = range(PARTITIONS) if restart else [self.rng.randrange(PARTITIONS)]
        while True:
            done, to_go = self.progress(partitions)
            target = done + min(FAULT_AFTER, to_go // 2)
            self.until(f"progress before {fault}", lambda: self.progress(partitions)[0] >= target)
            in_flight = self.progress(partitions)[1]
            if in_flight > 0:
                break
            self.feed_if_drained(partitions)

        partition = partitions[0]
        if fault == "consumer kill -9":
            self.consumers.kill(partition, self.victim(partition))
        elif fault.startswith("consumer killed"):
            flag = die_flag(self.args.work, partition,
                            "before-commit" if fault.endswith("before COMMIT") else "after-commit")
            open(flag, "w").close()
            self.until(f"a consumer to take {flag}",
                       lambda: not os.path.exists(flag) or self.feed_if_drained(partitions))
        elif fault == "PostgreSQL immediate restart":
            subprocess.run(self.pg_restart, check=True, stdout=subprocess.DEVNULL)
        elif fault == "RabbitMQ restart":
            restart_rabbitmq(self.rabbitmqctl)
            self.producer.connect()
        elif fault == "stale resume":
            stale = max(0, self.committed(partition) - 1 - STALE_BY)
            slot = self.victim(partition)
            self.consumers.retire(partition, slot)
            self.consumers.start(partition, slot, start_from=stale)
        else:
            self.overlap(partition, self.victim(partition))
        self.faults[fault] += 1
        where = "" if restart else f" of partition {partition}"
        print(f"{fault}{where}, with {in_flight} offsets to go", flush=True)

    def victim(self, partition):
        """One of the partition's consumers (two during an overlap)."""
        return self.rng.choice(self.consumers.slots(partition))

    def claimed_offsets(self, partition, slot):
        return {int(event[1]) for event in self.consumers.events(partition, slot)
                if event[0] in ("next", "duplicate")}

    def overlap(self, partition, old):
        """A second consumer of the stream while the first still runs, as in a rebalance; the
        first is revoked once both have claimed OVERLAP_SHARED offsets in common."""
        new = self.consumers.start(partition)

        def shared():
            return len(self.claimed_offsets(partition, old) &
                       self.claimed_offsets(partition, new))

        self.until("both consumers to claim the same offsets",
                   lambda: shared() >= OVERLAP_SHARED or self.feed_if_drained([partition]))
        # Any of the first's claims still in flight waits for the newcomer's, or the reverse.
        self.consumers.retire(partition, old)
        self.overlaps.append((partition, old, new, shared()))

    def finish(self):
        """Every offset committed, then the consumers drained."""
        self.until("every offset committed", lambda: self.progress(range(PARTITIONS))[1] == 0)
        self.until("the consumers to drain", self.consumers.drain())

    def figures(self):
        """Claims answered next and duplicate, offsets delivered more than once, the duplicates
        after stale resumes, the resumes, over every consumer's events."""
        answers = collections.Counter()
        deliveries = collections.Counter()
        stale_duplicates = 0
        resumes = collections.Counter()
        for (partition, slot) in {(p, s) for p in range(PARTITIONS)
                                  for s in range(self.consumers.next_slot[p])}:
            stale = False
            for event in self.consumers.events(partition, slot):
                if event[0] == "resume":
                    stale = event[2] == "stale"
                    resumes[event[2]] += 1
                elif event[0] in ("next", "duplicate"):
                    answers[event[0]] += 1
                    deliveries[(partition, int(event[1]))] += 1
                    stale_duplicates += stale and event[0] == "duplicate"
        return {"answers": answers, "redelivered offsets": sum(1 for count
                                                               in deliveries.values()
                                                               if count > 1),
                "stale duplicates": stale_duplicates, "resumes": resumes}

    def check(self):
        problems = []
        payments = self.producer.payments
        rows = self.db.query("SELECT payment, account, amount, stream, stream_offset, count(*) "
                             "FROM ledger GROUP BY 1, 2, 3, 4, 5")
        twice = [row for row in rows if row[5] != 1]
        unlike = [row for row in rows if payments.get(row[0]) != tuple(row[1:5])]
        missing = set(payments) - {row[0] for row in rows}
        if twice:
            problems.append(f"{len(twice)} payments applied more than once, e.g. {twice[0]}")
        if unlike:
            problems.append(f"{len(unlike)} ledger rows unlike the payment published at that "
                            f"offset, e.g. {unlike[0]} for {payments.get(unlike[0][0])}")
        if missing:
            problems.append(f"{len(missing)} payments never applied, e.g. {min(missing)}")
        balances = collections.Counter()
        for account, amount, _, _ in payments.values():
            balances[account] += amount
        got = dict(self.db.query("SELECT id, balance FROM accounts WHERE balance <> 0"))
        if got != dict(balances):
            problems.append(f"balances {got}, expected {dict(balances)}")
        positions = dict(self.db.query("SELECT stream, position FROM inbox.streams "
                                       "WHERE consumer = %s", (CONSUMER,)))
        last = {stream_name(p): self.producer.published[p] - 1 for p in range(PARTITIONS)}
        if positions != last:
            problems.append(f"stream positions {positions}, expected the last offsets {last}")
        figures = self.figures()
        if figures["stale duplicates"] == 0:
            problems.append("the stale resume was answered no duplicate: it tested nothing")
        if any(shared < OVERLAP_SHARED for _, _, _, shared in self.overlaps):
            problems.append(f"an overlap shared fewer than {OVERLAP_SHARED} offsets: "
                            f"{self.overlaps}")
        if problems:
            fail("\n  ".join(problems[:20]))
        return figures

    def report(self, figures):
        answers = figures["answers"]
        lines = [
            f"{len(self.producer.payments)} payments in {PARTITIONS} streams "
            f"({', '.join(str(n) for n in self.producer.published)}), each applied once; "
            f"positions at the last offsets",
            "faults: " + ", ".join(f"{count} {fault}"
                                   for fault, count in sorted(self.faults.items())),
            f"resumes: {figures['resumes']['committed']} from stream_position + 1 "
            f"({self.consumers.restarts} after a death), {figures['resumes']['stale']} from a "
            f"stale offset",
            f"claims as logged: {answers['next']} next, {answers['duplicate']} duplicate "
            f"(absorbed: {figures['stale duplicates']} after the stale resume, the rest in "
            f"overlaps and other resumes); {figures['redelivered offsets']} offsets delivered "
            f"more than once"]
        lines += [f"overlap on {stream_name(partition)}: consumers {old} and {new} both claimed "
                  f"{shared} offsets" for partition, old, new, shared in self.overlaps]
        print(lines[0], flush=True)
        for line in lines[1:]:
            print(textwrap.fill(line, width=96, initial_indent="  ", subsequent_indent="    "),
                  flush=True)


def main():
    if sys.argv[1:2] == ["consume"]:
        parser = argparse.ArgumentParser()
        parser.add_argument("--partition", type=int, required=True)
        parser.add_argument("--slot", type=int, required=True)
        parser.add_argument("--from", dest="start_from", type=int)
        parser.add_argument("--amqp-port", type=int, required=True)
        for name in ("--pghost", "--work"):
            parser.add_argument(name, required=True)
        args = parser.parse_args(sys.argv[2:])
        start_clock(DEADLINE_SECONDS)
        consume(args)
        return
    parser = scenario_parser()
    args = parser.parse_args()
    seed = int(os.environ.get("STREAM_SEED", random.SystemRandom().randrange(2**32)))
    print(f"seed {seed} (STREAM_SEED={seed} repeats this run)", flush=True)
    started = time.monotonic()
    start_clock(DEADLINE_SECONDS)
    run = Run(args, seed)
    run.run()
    run.report(run.check())
    print(f"ok in {time.monotonic() - started:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
