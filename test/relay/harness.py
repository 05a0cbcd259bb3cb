"""What the scenarios of test/relay share: the deadline, waiting for a condition, a connection
that survives PostgreSQL's restart, inbox-relay processes, exchanges, the commands that restart
PostgreSQL and RabbitMQ (written by test/relay/run.sh), and, for the consumer processes that the
scenarios kill, their event logs and flag files."""

import argparse
import os
import subprocess
import time

import pika
import psycopg

RELAY_ROLE = "outbox_relay"
# Short leases and retries, so that the faults are recovered from in seconds.
RELAY_OPTIONS = ["--batch", "50", "--lease", "3", "--retry-after", "0.3", "--poll", "0.5"]

deadline = time.monotonic() + 110  # a scenario sets its own with start_clock


def scenario_parser():
    """The arguments test/relay/run.sh gives every scenario; a scenario adds its own."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--relay", required=True, help="inbox-relay as installed")
    parser.add_argument("--pghost", required=True)
    parser.add_argument("--amqp-port", type=int, required=True)
    parser.add_argument("--work", required=True)
    # The broker's AMQP over TLS, and the certificates of the test (test/relay/run.sh: ca.pem
    # signed the broker's, for localhost, and relay.pem, which the broker asks for; other-ca.pem
    # signed relay-other-ca.pem only).
    parser.add_argument("--amqps-port", type=int)
    parser.add_argument("--tls-dir")
    return parser


def start_clock(seconds):
    global deadline
    deadline = time.monotonic() + seconds


def past_deadline():
    return time.monotonic() > deadline


def seconds_left():
    return max(1, deadline - time.monotonic())


def fail(message):
    print(f"FAILED: {message}", flush=True)
    raise SystemExit(1)


def wait_for(what, predicate):
    while not predicate():
        if past_deadline():
            fail(f"timed out waiting for {what}")
        time.sleep(0.05)


class Database:
    """The test's own connection, which survives the server's restart: a query that meets a
    broken connection reconnects and runs again."""

    def __init__(self, pghost, dbname):
        self.conninfo = f"host={pghost} user=postgres dbname={dbname}"
        self.connection = None

    def query(self, statement, parameters=None):
        while True:
            try:
                if self.connection is None or self.connection.closed:
                    self.connection = psycopg.connect(self.conninfo, autocommit=True)
                cursor = self.connection.execute(statement, parameters)
                return cursor.fetchall() if cursor.description else []
            except psycopg.OperationalError:
                self.connection = None
                if past_deadline():
                    raise
                time.sleep(0.1)

    def value(self, statement, parameters=None):
        return self.query(statement, parameters)[0][0]

    def delivered(self):
        return self.value("SELECT count(*) FROM inbox.outbox WHERE state = 'delivered'")

    def delivered_among(self, ids):
        return self.value("SELECT count(*) FROM inbox.outbox WHERE id = ANY(%s::uuid[]) "
                          "AND state = 'delivered'", (list(ids),))


def create_database(pghost, dbname):
    """A new database with the extension and the relay's role, granted what it needs."""
    with psycopg.connect(f"host={pghost} user=postgres dbname=postgres",
                         autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {dbname}")
        # The role is the cluster's: made once for all the databases.
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                             (RELAY_ROLE,)).fetchall():
            admin.execute(f"CREATE ROLE {RELAY_ROLE} LOGIN")
    db = Database(pghost, dbname)
    db.query("CREATE EXTENSION inbox")
    # The relay runs with the least it needs: 'relay', and 'monitor' for the lag it prints.
    db.query(f"SELECT inbox.grant_access('{RELAY_ROLE}', 'relay')")
    db.query(f"SELECT inbox.grant_access('{RELAY_ROLE}', 'monitor')")
    return db


class Relay:
    """One inbox-relay process, its output appended to WORK/NAME.log; options after (and over)
    RELAY_OPTIONS."""

    def __init__(self, args, dbname, name, sink, options=()):
        self.name = name
        self.command = [args.relay, "--db", f"host={args.pghost} user={RELAY_ROLE} "
                        f"dbname={dbname}", "--name", name, *sink, *RELAY_OPTIONS, *options]
        self.log_path = os.path.join(args.work, f"{name}.log")
        self.process = None

    def start(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)

    def stop(self, signal_number):
        self.process.send_signal(signal_number)
        return self.process.wait(timeout=seconds_left())

    def lines(self):
        with open(self.log_path) as log:
            return log.read().splitlines()


def amqp_sink(amqp_port, destinations):
    return ["--amqp", f"amqp://guest:guest@127.0.0.1:{amqp_port}/",
            "--destinations", ",".join(destinations)]


def amqp_connection(amqp_port):
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", amqp_port))


def declare_exchange(amqp_port, name, queue=True):
    """A durable topic exchange and (queue) a durable queue of the same name bound to every
    key."""
    with amqp_connection(amqp_port) as amqp:
        channel = amqp.channel()
        channel.exchange_declare(name, "topic", durable=True)
        if queue:
            channel.queue_declare(name, durable=True)
            channel.queue_bind(name, name, "#")


def read_queue(amqp_port, name):
    """Every message the queue holds: (routing key, properties, body), consumed."""
    with amqp_connection(amqp_port) as amqp:
        channel = amqp.channel()
        count = channel.queue_declare(name, durable=True, passive=True).method.message_count
        arrivals = []
        for method, properties, body in channel.consume(name, auto_ack=True,
                                                         inactivity_timeout=5):
            if method is None:
                fail(f"queue {name} said {count} messages, gave {len(arrivals)}")
            arrivals.append((method.routing_key, properties, body))
            if len(arrivals) == count:
                break
        channel.cancel()
        return arrivals


def restart_commands(work):
    """pg_ctl's immediate restart and rabbitmqctl, as test/relay/run.sh wrote them."""
    def command(name):
        with open(os.path.join(work, name), "rb") as f:
            return f.read().decode().split("\0")[:-1]
    return command("pg-restart.args"), command("rabbitmqctl.args")


def restart_rabbitmq(rabbitmqctl):
    subprocess.run([*rabbitmqctl, "stop_app"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*rabbitmqctl, "start_app"], check=True, stdout=subprocess.DEVNULL)


class EventLog:
    """One line per event, written straight to the file so that a SIGKILL loses nothing that
    was written."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, *fields):
        os.write(self.fd, (" ".join(fields) + "\n").encode())


def read_events(path):
    try:
        with open(path) as f:
            return [line.split() for line in f]
    except FileNotFoundError:
        return []


def connect_when_up(connect, errors):
    """The server may be restarting: tries again until the deadline."""
    while True:
        try:
            return connect()
        except errors:
            if past_deadline():
                raise
            time.sleep(0.2)


def claim_flag(path):
    """True for the one process that removes the file."""
    try:
        os.remove(path)
        return True
    except FileNotFoundError:
        return False
