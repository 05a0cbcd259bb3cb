#!/usr/bin/python3
"""The chain, end to end: payments sent with the outbox, applied exactly once by a consumer that
sends an OrderPaid from the same transaction, applied exactly once again downstream.

    chain_test.py --relay PATH --pghost DIR --amqp-port PORT --work DIR     (test/relay/run.sh)
    chain_test.py ... --compare --commit-deaths N     (test/bench/publish_after_commit.sh)
    chain_test.py consume --role ROLE ...             one consumer process (started by the run)

  producer: inbox.send('payments', payment, key => account), some transactions rolled back;
  two inbox-relay processes publish to exchange `payments`, queue `payments`;
  payments consumers (manual acks, prefetch), per delivery ONE transaction of
    inbox.apply('payments', id, 'apply_payment(jsonb)', payment): the handler credits the
    account and sends an OrderPaid with inbox.send('order_paid', ..., key => account);
    commit, then ack;
  the same relays publish to exchange `order_paid`, queue `order_paid`;
  shipping consumers apply each OrderPaid with inbox.apply('shipping', ...) into shipments.

Faults, in a seeded random order, each while messages are in flight: kill -9 of a relay, of a
payments consumer and of a shipping consumer; a consumer of each kind that kills itself (SIGKILL)
between its COMMIT and its ack, so that the broker redelivers a message already applied; an
immediate restart of PostgreSQL; a restart of the RabbitMQ application. What dies is restarted.
Asserted: every committed payment credited exactly once (ledger, balances, markers), one OrderPaid
per committed payment shipped exactly once, nothing of a rolled-back transaction anywhere, both
queues empty. Printed: the figures, and the redeliveries absorbed at each hop.

--compare runs the chain a second time in another database, where the payments consumer
publishes the OrderPaid itself to RabbitMQ after its COMMIT instead of sending it with the
outbox (the same seed, the same faults; the deaths between COMMIT and ack fall between COMMIT and
that publish), and prints how many OrderPaid each chain lost.
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time

import pika
import pika.exceptions
import psycopg

from harness import (RELAY_ROLE, EventLog, Relay, amqp_connection, amqp_sink, claim_flag,
                     connect_when_up, create_database, declare_exchange, fail, read_events,
                     restart_commands, restart_rabbitmq, scenario_parser, start_clock, wait_for)

DEADLINE_SECONDS = 110  # each chain; the suite must stay under two minutes
ACCOUNTS = 12
ROLLED_BACK_SHARE = 0.1
PAYMENTS_FIRST = 800  # in transactions of 1 to 5 payments, before the faults
PAYMENTS_PER_FAULT = 180  # the same, before each fault
RELAY_BURST = 600  # payments in one transaction before a relay's kill
FAULT_AFTER = 30  # rows of progress at the hop after those commits, then the fault
CONSUMERS_PER_ROLE = 2
PREFETCH = 20
IDLE_EXIT_SECONDS = 1.0  # once draining: a consumer with nothing to do for this long exits
EXIT_RECONNECT = 75  # a consumer that lost PostgreSQL or RabbitMQ exits with it, to be restarted

# Each role of consumer: its queue (named as its exchange), inbox consumer name and handler.
ROLES = {
    "payments": ("payments", "payments", "apply_payment(jsonb)"),
    "shipping": ("order_paid", "shipping", "ship_order(jsonb)"),
}
# The payments handler of the comparison: the same credit, no outbox.
CREDIT_ONLY = "credit(jsonb)"

SCHEMA = """
CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
-- No unique constraints, on purpose: a payment applied twice shows as two rows.
CREATE TABLE ledger (payment int NOT NULL, account text NOT NULL, amount bigint NOT NULL);
CREATE TABLE shipments (payment int NOT NULL, account text NOT NULL, amount bigint NOT NULL);
CREATE FUNCTION credit(payment jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accounts SET balance = balance + (payment->>'amount')::bigint
    WHERE id = payment->>'account';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no account %', payment->>'account';
    END IF;
    INSERT INTO ledger
    VALUES ((payment->>'n')::int, payment->>'account', (payment->>'amount')::bigint);
END $$;
CREATE FUNCTION order_paid(payment jsonb) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('type', 'OrderPaid', 'payment', payment->'n',
                              'account', payment->'account', 'amount', payment->'amount')
$$;
CREATE FUNCTION apply_payment(payment jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM credit(payment);
    PERFORM inbox.send('order_paid', order_paid(payment), key => payment->>'account');
END $$;
CREATE FUNCTION ship_order(paid jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO shipments
    VALUES ((paid->>'payment')::int, paid->>'account', (paid->>'amount')::bigint)
$$;
"""


# ---------------------------------------------------------------------------- the consumers


def die_after_commit_flag(work, role):
    """The file that asks one consumer of the role to kill itself after its next COMMIT."""
    return os.path.join(work, f"die-after-commit-{role}")


def draining_flag(work, role):
    return os.path.join(work, f"draining-{role}")


def consume(args):
    queue, inbox_consumer, handler = ROLES[args.role]
    if args.role == "payments" and args.publish_after_commit:
        handler = CREDIT_ONLY
    log = EventLog(os.path.join(args.work, f"{args.role}-{args.index}.events"))
    conninfo = f"host={args.pghost} user=postgres dbname={args.dbname}"
    try:
        db = connect_when_up(lambda: psycopg.connect(conninfo, autocommit=True),
                             psycopg.OperationalError)
        amqp = connect_when_up(lambda: amqp_connection(args.amqp_port),
                               pika.exceptions.AMQPConnectionError)
        channel = amqp.channel()
        channel.basic_qos(prefetch_count=PREFETCH)
        if args.publish_after_commit:
            channel.confirm_delivery()
        last_delivery = time.monotonic()
        for method, properties, body in channel.consume(queue, inactivity_timeout=0.1):
            if method is None:
                if (os.path.exists(draining_flag(args.work, args.role))
                        and time.monotonic() - last_delivery > IDLE_EXIT_SECONDS):
                    break
                continue
            last_delivery = time.monotonic()
            message_id = properties.message_id
            log("delivered", message_id, "redelivered" if method.redelivered else "first")
            with db.transaction():
                first = db.execute("SELECT inbox.apply(%s, %s, %s, %s)",
                                   (inbox_consumer, message_id, handler, body.decode())
                                   ).fetchone()[0]
            log("applied" if first else "duplicate", message_id)
            if first and claim_flag(die_after_commit_flag(args.work, args.role)):
                log("killed-after-commit", message_id)
                os.kill(os.getpid(), signal.SIGKILL)
            if first and args.role == "payments" and args.publish_after_commit:
                publish_order_paid(channel, message_id, json.loads(body))
            channel.basic_ack(method.delivery_tag)
        channel.cancel()
        amqp.close()
        db.close()
    except (psycopg.OperationalError, pika.exceptions.AMQPError) as error:
        log("lost-connection", type(error).__name__)
        sys.exit(EXIT_RECONNECT)
    log("exited")


def publish_order_paid(channel, payment_id, payment):
    """The comparison's consumer: the OrderPaid published after the COMMIT, with confirms."""
    paid = {"type": "OrderPaid", "payment": payment["n"], "account": payment["account"],
            "amount": payment["amount"]}
    channel.basic_publish("order_paid", payment["account"], json.dumps(paid),
                          pika.BasicProperties(message_id=f"{payment_id}/paid", delivery_mode=2,
                                               content_type="application/json"))


# ---------------------------------------------------------------------------- the run


class Producer:
    """Sends payments with inbox.send, and remembers what committed and what rolled back."""

    def __init__(self, pghost, dbname, rng):
        self.conninfo = f"host={pghost} user=postgres dbname={dbname}"
        self.connection = psycopg.connect(self.conninfo)
        self.rng = rng
        self.counter = 0
        self.committed = {}  # payment number -> (outbox id, account, amount)
        self.rolled_back = {}  # payment number -> outbox id

    def reconnect(self):
        """After the server's restart."""
        self.connection = psycopg.connect(self.conninfo)

    def transactions(self, count, burst=False):
        """About count payments, 1 to 5 per transaction, some transactions rolled back; or,
        as a burst, count in one transaction that commits."""
        sent = 0
        while sent < count:
            size = count if burst else self.rng.randint(1, 5)
            commit = burst or self.rng.random() >= ROLLED_BACK_SHARE
            payments = {}
            for _ in range(size):
                self.counter += 1
                account = f"acct-{self.rng.randrange(ACCOUNTS):02d}"
                amount = self.rng.randrange(1, 100000)
                payment = {"n": self.counter, "account": account, "amount": amount}
                message_id = self.connection.execute(
                    "SELECT inbox.send('payments', %s, key => %s)::text",
                    (json.dumps(payment), account)).fetchone()[0]
                payments[self.counter] = (message_id, account, amount)
            if commit:
                self.connection.commit()
                self.committed.update(payments)
            else:
                self.connection.rollback()
                self.rolled_back.update((n, p[0]) for n, p in payments.items())
            sent += size


class Consumers:
    """The consumer processes of both roles; supervise() restarts the ones that died."""

    def __init__(self, args, dbname, publish_after_commit):
        self.args = args
        self.dbname = dbname
        self.publish_after_commit = publish_after_commit
        self.processes = {}  # (role, index) -> Popen
        self.restarts = collections.Counter()

    def start(self, role, index):
        command = [sys.executable, os.path.abspath(__file__), "consume", "--role", role,
                   "--index", str(index), "--pghost", self.args.pghost, "--dbname", self.dbname,
                   "--amqp-port", str(self.args.amqp_port), "--work", self.args.work]
        if self.publish_after_commit:
            command.append("--publish-after-commit")
        self.processes[(role, index)] = subprocess.Popen(command)

    def start_all(self):
        for role in ROLES:
            for index in range(CONSUMERS_PER_ROLE):
                self.start(role, index)

    def supervise(self):
        """Restarts a consumer killed or cut off; any other exit fails the test, but that of a
        consumer told to drain."""
        for (role, index), process in self.processes.items():
            status = process.poll()
            if status is None or (status == 0 and self.draining(role)):
                continue
            if status not in (-signal.SIGKILL, EXIT_RECONNECT):
                fail(f"{role} consumer {index} exited with {status}")
            self.restarts[role] += 1
            self.start(role, index)

    def kill(self, role, rng):
        process = self.processes[(role, rng.randrange(CONSUMERS_PER_ROLE))]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def draining(self, role):
        return os.path.exists(draining_flag(self.args.work, role))

    def drain(self, role):
        """Tells the role's consumers to exit once their queue has had nothing for a while;
        returns the condition that they all have."""
        open(draining_flag(self.args.work, role), "w").close()
        return lambda: all(process.poll() == 0 for (process_role, _), process
                           in self.processes.items() if process_role == role)

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def events(self, role):
        return [event for index in range(CONSUMERS_PER_ROLE)
                for event in read_events(os.path.join(self.args.work,
                                                      f"{role}-{index}.events"))]


def set_up(args, dbname):
    db = create_database(args.pghost, dbname)
    db.query(SCHEMA)
    # A broker away for seconds never makes a message dead.
    db.query(f"ALTER ROLE {RELAY_ROLE} SET inbox.outbox_max_attempts = 1000")
    db.query("INSERT INTO accounts (id) SELECT format('acct-%%s', lpad(i::text, 2, '0')) "
             "FROM generate_series(0, %s) AS i", (ACCOUNTS - 1,))
    for role in ROLES:
        for flag in (die_after_commit_flag(args.work, role), draining_flag(args.work, role)):
            if os.path.exists(flag):
                os.remove(flag)
        for index in range(CONSUMERS_PER_ROLE):
            events = os.path.join(args.work, f"{role}-{index}.events")
            if os.path.exists(events):
                os.remove(events)
    return db


def fault_plan(rng, commit_deaths):
    """The faults in a random order: each kind once, the payments consumer's death between
    COMMIT and ack commit_deaths times."""
    plan = ["relay kill -9", "payments consumer kill -9", "shipping consumer kill -9",
            "shipping consumer killed between COMMIT and ack", "PostgreSQL immediate restart",
            "RabbitMQ restart"]
    plan += ["payments consumer killed between COMMIT and ack"] * commit_deaths
    rng.shuffle(plan)
    return plan


class Chain:
    """One run of the chain in database dbname; publish_after_commit: the comparison's."""

    def __init__(self, args, dbname, seed, publish_after_commit):
        self.args = args
        self.rng = random.Random(seed)
        self.publish_after_commit = publish_after_commit
        self.db = set_up(args, dbname)
        self.producer = Producer(args.pghost, dbname, self.rng)
        self.consumers = Consumers(args, dbname, publish_after_commit)
        # The comparison's relays carry the payments only: its consumer publishes the rest.
        destinations = ("payments",) if publish_after_commit else ("payments", "order_paid")
        self.relays = [Relay(args, dbname, f"{dbname}-relay-{i}",
                             amqp_sink(args.amqp_port, destinations)) for i in (1, 2)]
        self.pg_restart, self.rabbitmqctl = restart_commands(args.work)
        self.faults = collections.Counter()

    def hop_state(self, fault):
        """(what the hop that the fault hits has done, what it has still to do)"""
        if fault.startswith("relay"):
            return self.db.query("SELECT count(*) FILTER (WHERE state = 'delivered'), "
                                 "count(*) FILTER (WHERE state <> 'delivered') "
                                 "FROM inbox.outbox")[0]
        table = "shipments" if fault.startswith("shipping") else "ledger"
        return self.db.query(f"SELECT count(*), %s - count(DISTINCT payment) FROM {table}",
                             (len(self.producer.committed),))[0]

    def until(self, what, predicate):
        """wait_for, restarting the consumers that die meanwhile."""
        wait_for(what, lambda: self.consumers.supervise() or predicate())

    def run(self):
        for relay in self.relays:
            relay.start()
        self.consumers.start_all()
        try:
            self.producer.transactions(PAYMENTS_FIRST)
            for fault in fault_plan(self.rng, self.args.commit_deaths):
                self.producer.transactions(PAYMENTS_PER_FAULT)
                if fault.startswith("relay"):
                    # At once, so that the relays, faster than the consumers, have a backlog.
                    self.producer.transactions(RELAY_BURST, burst=True)
                self.inject(fault)
            self.finish()
        finally:
            self.consumers.stop()
            for relay in self.relays:
                if relay.process.poll() is None:
                    relay.process.kill()
                    relay.process.wait()

    def inject(self, fault):
        """The fault, once the hop it hits has made some progress since the producer's last
        commit and still has messages to go (else the fault would test nothing): a hop that
        drained meanwhile, however fast or slow this machine is, is fed another burst."""
        while True:
            done, to_go = self.hop_state(fault)
            target = done + min(FAULT_AFTER, to_go // 2)
            self.until(f"progress before {fault}", lambda: self.hop_state(fault)[0] >= target)
            in_flight = self.hop_state(fault)[1]
            if in_flight > 0:
                break
            self.producer.transactions(RELAY_BURST, burst=True)

        if fault == "relay kill -9":
            victim = self.relays[self.rng.randrange(len(self.relays))]
            victim.process.send_signal(signal.SIGKILL)
            if victim.process.wait() != -signal.SIGKILL:
                fail("the relay did not die of SIGKILL")
            victim.start()
        elif fault.endswith("consumer kill -9"):
            self.consumers.kill(fault.split()[0], self.rng)
        elif fault.endswith("between COMMIT and ack"):
            flag = die_after_commit_flag(self.args.work, fault.split()[0])
            open(flag, "w").close()
            self.until(f"a consumer to take {flag}",
                       lambda: not os.path.exists(flag) or self.feed_if_drained(fault))
        elif fault == "PostgreSQL immediate restart":
            subprocess.run(self.pg_restart, check=True, stdout=subprocess.DEVNULL)
            self.producer.reconnect()
        else:
            restart_rabbitmq(self.rabbitmqctl)
        self.faults[fault] += 1
        print(f"{fault}, with {in_flight} in flight at that hop", flush=True)

    def feed_if_drained(self, fault):
        """Another burst when the hop has nothing left to deliver (the flag waits for one more
        first delivery); never the end of a wait."""
        if self.hop_state(fault)[1] <= 0:
            self.producer.transactions(RELAY_BURST, burst=True)
        return False

    def finish(self):
        """Lets the chain come to rest, one hop after the other, whatever it did: every payment
        published, the payments consumers drained; every OrderPaid published, the shipping
        consumers drained; then stops the relays."""
        self.until("the payments published", self.outbox_delivered("payments"))
        self.until("the payments consumers to drain", self.consumers.drain("payments"))
        self.until("the outbox delivered", self.outbox_delivered("payments", "order_paid"))
        self.until("the shipping consumers to drain", self.consumers.drain("shipping"))
        for relay in self.relays:
            if relay.stop(signal.SIGTERM) != 0:
                fail(f"{relay.name} did not exit 0 on SIGTERM")

    def outbox_delivered(self, *destinations):
        return lambda: self.db.value("SELECT count(*) FROM inbox.outbox WHERE state <> "
                                     "'delivered' AND destination = ANY(%s)",
                                     (list(destinations),)) == 0

    def queue_lengths(self):
        with amqp_connection(self.args.amqp_port) as amqp:
            channel = amqp.channel()
            return {queue: channel.queue_declare(queue, durable=True,
                                                 passive=True).method.message_count
                    for queue, _, _ in ROLES.values()}

    def hop_figures(self, role):
        """Deliveries, the broker's redeliveries (flagged), the relays' takes of a message
        beyond its first (a lease expired or a publish failed: each may be a resend), and the
        duplicates that inbox.apply answered."""
        events = self.consumers.events(role)
        delivered = [e for e in events if e[0] == "delivered"]
        queue = ROLES[role][0]
        retakes = self.db.value("SELECT coalesce(sum(attempts - 1), 0) FROM inbox.outbox "
                                "WHERE destination = %s", (queue,))
        return {"deliveries": len(delivered),
                "broker redeliveries": sum(1 for e in delivered if e[2] == "redelivered"),
                "relay re-takes": retakes,
                "duplicates absorbed by inbox.apply": sum(1 for e in events
                                                          if e[0] == "duplicate"),
                "message ids": {e[1] for e in delivered}}

    def check(self):
        """The assertions; returns the OrderPaid lost (the comparison's figure: 0 otherwise)."""
        problems = []
        committed = self.producer.committed
        expected = {n: (account, amount) for n, (_, account, amount) in committed.items()}

        def exactly_once(table):
            rows = self.db.query(f"SELECT payment, account, amount, count(*) FROM {table} "
                                 "GROUP BY 1, 2, 3")
            twice = [row for row in rows if row[3] != 1]
            unknown = [row for row in rows if expected.get(row[0]) != (row[1], row[2])]
            rolled_back = [row for row in rows if row[0] in self.producer.rolled_back]
            missing = set(expected) - {row[0] for row in rows}
            if twice:
                problems.append(f"{table}: {len(twice)} payments more than once, e.g. {twice[0]}")
            if rolled_back:
                problems.append(f"{table}: {len(rolled_back)} rolled-back payments, "
                                f"e.g. {rolled_back[0]}")
            elif unknown:
                problems.append(f"{table}: {len(unknown)} rows unlike any committed payment, "
                                f"e.g. {unknown[0]}")
            return missing

        never_applied = exactly_once("ledger")
        if never_applied:
            problems.append(f"ledger: {len(never_applied)} committed payments never applied, "
                            f"e.g. {min(never_applied)}")
        balances = collections.Counter()
        for account, amount in expected.values():
            balances[account] += amount
        got = dict(self.db.query("SELECT id, balance FROM accounts WHERE balance <> 0"))
        if got != dict(balances):
            problems.append(f"balances {got}, expected {dict(balances)}")
        markers = dict(self.db.query("SELECT consumer, count(*) FROM inbox.messages "
                                     "GROUP BY consumer"))
        lost = exactly_once("shipments")
        if markers.get("payments") != len(committed):
            problems.append(f"{markers.get('payments')} payments markers, expected "
                            f"{len(committed)}")
        if not self.publish_after_commit:
            if lost:
                problems.append(f"{len(lost)} OrderPaid never shipped, e.g. payment {min(lost)}")
            if markers.get("shipping") != len(committed):
                problems.append(f"{markers.get('shipping')} shipping markers, expected "
                                f"{len(committed)}")
            outbox = dict(self.db.query("SELECT destination, count(*) FROM inbox.outbox "
                                        "WHERE state = 'delivered' GROUP BY destination"))
            if outbox != {"payments": len(committed), "order_paid": len(committed)}:
                problems.append(f"outbox delivered {outbox}, expected {len(committed)} each")
        payment_ids = {message_id for message_id, _, _ in committed.values()}
        delivered = self.hop_figures("payments")["message ids"]
        if delivered & set(self.producer.rolled_back.values()):
            problems.append("a rolled-back payment was delivered")
        if delivered - payment_ids:
            problems.append(f"unknown payments delivered: {sorted(delivered - payment_ids)[:3]}")
        left = self.queue_lengths()
        if any(left.values()):
            problems.append(f"messages left in the queues: {left}")
        if problems:
            fail("\n  ".join(problems[:20]))
        return len(lost)

    def report(self, title, lost):
        print(f"{title}: {len(self.producer.committed)} payments committed, "
              f"{len(self.producer.rolled_back)} rolled back (never delivered, applied or "
              f"shipped); OrderPaid lost: {lost}", flush=True)
        print("  faults: " + ", ".join(f"{count} {fault}" for fault, count
                                       in sorted(self.faults.items())), flush=True)
        print("  consumer restarts: " + ", ".join(
            f"{role} {self.consumers.restarts[role]}" for role in ROLES), flush=True)
        for role in ROLES:
            figures = self.hop_figures(role)
            del figures["message ids"]
            print(f"  {role} hop: " + ", ".join(f"{v} {k}" for k, v in figures.items()),
                  flush=True)


def main():
    if sys.argv[1:2] == ["consume"]:
        parser = argparse.ArgumentParser()
        parser.add_argument("--role", choices=ROLES, required=True)
        parser.add_argument("--index", type=int, required=True)
        parser.add_argument("--dbname", required=True)
        parser.add_argument("--publish-after-commit", action="store_true")
        for name in ("--pghost", "--amqp-port", "--work"):
            parser.add_argument(name, required=True)
        args = parser.parse_args(sys.argv[2:])
        args.amqp_port = int(args.amqp_port)
        start_clock(DEADLINE_SECONDS)
        consume(args)
        return
    parser = scenario_parser()
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--commit-deaths", type=int, default=1)
    args = parser.parse_args()
    seed = int(os.environ.get("CHAIN_SEED", random.SystemRandom().randrange(2**32)))
    print(f"seed {seed} (CHAIN_SEED={seed} repeats this run)", flush=True)
    for exchange in ("payments", "order_paid"):
        declare_exchange(args.amqp_port, exchange)

    started = time.monotonic()
    start_clock(DEADLINE_SECONDS)
    chain = Chain(args, "chain_outbox", seed, publish_after_commit=False)
    chain.run()
    chain.report("outbox chain", chain.check())
    print(f"ok in {time.monotonic() - started:.1f} s", flush=True)
    if args.compare:
        start_clock(DEADLINE_SECONDS)
        direct = Chain(args, "chain_direct", seed, publish_after_commit=True)
        direct.run()
        lost = direct.check()
        direct.report("publish after COMMIT", lost)
        print(f"OrderPaid lost: outbox 0 of {len(chain.producer.committed)}, publish after "
              f"COMMIT {lost} of {len(direct.producer.committed)}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
