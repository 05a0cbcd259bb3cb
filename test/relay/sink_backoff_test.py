"""inbox-relay backs off from a sink that does not work, and takes no batch while it cannot reach
it (docs/outbox.md, "Failures"): each take counts an attempt, so a relay that retried every
0.1 s made every message dead (inbox.outbox_max_attempts, 10) within a second of an outage.

- HTTP: an endpoint that refuses connections for 4 s: no message is taken meanwhile, none dies,
  and all are delivered, once each, when it answers.
- HTTP: an endpoint that accepts connections and closes them: the delay doubles at each batch
  lost, a connection that works does not reset it (it used to, and every message was dead
  within a second).
- RabbitMQ: a broker that closes the relay's channel at a message (a user without write access
  to its exchange): the batch goes again a message at a time, so that that message is refused
  by itself (403) and the others of the batch are delivered; it used to lose the whole batch with
  the channel, every time, until every message of the batch was dead.
- RabbitMQ: a message that AMQP cannot carry (a header name over 255 bytes, headers over a
  frame) is refused by itself; it used to break the connection under the rest of its batch,
  every time it was taken, until every message of the batch was dead.
- RabbitMQ: a relay idle for 5 s with --heartbeat 1 keeps its connection (one connection, no
  loss) and publishes the next message on it; without its heartbeats the broker closes an idle
  connection after two missed. Closed by the broker while idle, the connection's loss is said (a
  "lost" line, as under a batch) and the connection made again before the next message.
- A --db that libpq cannot parse is a bad option: exit status 2, not a database to wait for.

Run as a scenario of test/relay/run.sh: test/relay/run.sh WORKDIR BINDIR sink_backoff_test.py"""

import http.server
import socketserver
import subprocess
import threading
import time

from harness import (Relay, create_database, declare_exchange, fail, restart_commands,
                     scenario_parser, start_clock, wait_for)

DATABASE = "sink_backoff"
OUTAGE_SECONDS = 4
IDLE_SECONDS = 5


class Endpoint(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests = []

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Endpoint.requests.append(self.headers["Idempotency-Key"])
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


def free_port():
    server = http.server.HTTPServer(("127.0.0.1", 0), Endpoint)
    port = server.server_port
    server.server_close()
    return port


def run_until(relay, what, predicate, then_seconds=0):
    """Starts the relay, waits until the predicate holds (and then_seconds more), and stops it:
    SIGTERM, exit status 0."""
    relay.start()
    try:
        wait_for(what, predicate)
        time.sleep(then_seconds)
    finally:
        if relay.stop(15) != 0:
            fail(f"{what}: the relay did not exit 0 on SIGTERM")


def delivered(db, destination):
    return db.value("SELECT count(*) FROM inbox.outbox WHERE destination = %s "
                    "AND state = 'delivered'", (destination,))


def http_outage(args, db):
    port = free_port()
    ids = [str(db.value("SELECT inbox.send('hooks', %s::jsonb)", (f'{{"n": {i}}}',)))
           for i in range(3)]
    relay = Relay(args, DATABASE, "relay-http", ["--http", f"http://127.0.0.1:{port}/"],
                  ["--destinations", "hooks"])
    relay.start()
    time.sleep(OUTAGE_SECONDS)
    rows = db.query("SELECT state, attempts FROM inbox.outbox WHERE destination = 'hooks'")
    if any(state == "dead" or attempts > 1 for state, attempts in rows):
        fail(f"HTTP endpoint down for {OUTAGE_SECONDS} s: (state, attempts) {rows}")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        wait_for("the webhooks delivered", lambda: delivered(db, "hooks") == len(ids))
    finally:
        if relay.stop(15) != 0:
            fail("the HTTP relay did not exit 0 on SIGTERM")
        server.shutdown()
    if sorted(Endpoint.requests) != sorted(ids):
        fail(f"requests {Endpoint.requests}, expected each of {ids} once")
    print(f"HTTP: endpoint down {OUTAGE_SECONDS} s, {len(ids)} messages taken "
          f"{max(a for _, a in rows)} times meanwhile, delivered once each")


def http_closing_endpoint(args, db):
    # Accepts each connection and closes it: every connection works, no batch is answered.
    server = socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    for i in range(3):
        db.query("SELECT inbox.send('closing', %s::jsonb)", (f'{{"n": {i}}}',))
    relay = Relay(args, DATABASE, "relay-closing",
                  ["--http", f"http://127.0.0.1:{server.server_address[1]}/"],
                  ["--destinations", "closing"])
    relay.start()
    time.sleep(OUTAGE_SECONDS)
    stopped = relay.stop(15)
    server.shutdown()
    server.server_close()
    if stopped != 0:
        fail("the relay did not exit 0 on SIGTERM")
    rows = db.query("SELECT state, attempts FROM inbox.outbox WHERE destination = 'closing'")
    # A batch lost after a connection that worked doubles the delay too: 0.1 + 0.2 + 0.4 + 0.8
    # + 1.6 s, at most 6 takes in 4 s (about 40 when each connection reset the delay, every
    # message dead after 10).
    if any(state == "dead" or attempts > 6 for state, attempts in rows):
        fail(f"an endpoint that closes every connection, for {OUTAGE_SECONDS} s: "
             f"(state, attempts) {rows}")
    print(f"HTTP: an endpoint that closes every connection, {OUTAGE_SECONDS} s: messages taken "
          f"{max(a for _, a in rows)} times, none dead")


def refused_channel(args, db, rabbitmqctl):
    subprocess.run([*rabbitmqctl, "add_user", "limited", "limited"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([*rabbitmqctl, "set_permissions", "-p", "/", "limited", ".*", "^allowed$",
                    ".*"], check=True, stdout=subprocess.DEVNULL)
    declare_exchange(args.amqp_port, "denied")
    declare_exchange(args.amqp_port, "allowed")
    # Each denied message first: the broker closes the channel at it, and drops what follows.
    for i in range(3):
        db.query("SELECT inbox.send('denied', %s::jsonb)", (f'{{"n": {i}}}',))
        db.query("SELECT inbox.send('allowed', %s::jsonb)", (f'{{"n": {i}}}',))
    relay = Relay(args, DATABASE, "relay-denied",
                  ["--amqp", f"amqp://limited:limited@127.0.0.1:{args.amqp_port}/"],
                  ["--destinations", "denied,allowed"])
    run_until(relay, "the messages to the allowed exchange delivered",
              lambda: delivered(db, "allowed") == 3)
    connections = sum(line.startswith("connected to amqp") for line in relay.lines())
    allowed = db.query("SELECT attempts FROM inbox.outbox WHERE destination = 'allowed'")
    denied = db.query("SELECT state, last_error FROM inbox.outbox WHERE destination = 'denied'")
    # The first batch is lost with the channel; the next goes a message at a time on one
    # connection, each denied one refused by itself.
    if connections > 2 or any(attempts > 2 for (attempts,) in allowed) or any(
            state == "delivered" or "403" not in (error or "") for state, error in denied):
        fail(f"a channel closed at a denied exchange: {connections} connections, allowed "
             f"attempts {allowed}, denied {denied}")
    print(f"RabbitMQ: an exchange the user may not write to refused its messages by themselves "
          f"(403), the others delivered; {connections} connections")


def unpublishable(args, db):
    declare_exchange(args.amqp_port, "poison")
    db.query("SELECT inbox.send('poison', '{\"n\": 1}', key => 'a')")
    db.query("SELECT inbox.send('poison', '{\"n\": 2}', key => 'b', "
             "headers => jsonb_build_object(repeat('h', 300), 'v'))")
    db.query("SELECT inbox.send('poison', '{\"n\": 3}', key => 'c', "
             "headers => jsonb_build_object('h', repeat('v', 200000)))")
    db.query("SELECT inbox.send('poison', '{\"n\": 4}', key => 'd')")
    relay = Relay(args, DATABASE, "relay-poison",
                  ["--amqp", f"amqp://guest:guest@127.0.0.1:{args.amqp_port}/"],
                  ["--destinations", "poison"])
    run_until(relay, "the publishable messages delivered", lambda: delivered(db, "poison") == 2,
              then_seconds=1)
    rows = db.query("SELECT key, state, attempts FROM inbox.outbox "
                    "WHERE destination = 'poison' ORDER BY key")
    if [(key, state) for key, state, _ in rows] != [
            ("a", "delivered"), ("b", "pending"), ("c", "pending"), ("d", "delivered")] or \
            rows[0][2] != 1 or rows[3][2] != 1:
        fail(f"messages AMQP cannot carry, in a batch with others: {rows}")
    if any("lost" in line for line in relay.lines()):
        fail("a message AMQP cannot carry broke the connection")
    print("RabbitMQ: messages AMQP cannot carry refused by themselves, the rest delivered once")


def idle_heartbeats(args, db, rabbitmqctl):
    """Idle with heartbeats, the connection is kept; closed by the broker while idle, the loss is
    said (a "lost" line, as under a batch) and the connection made again before the next
    message."""
    declare_exchange(args.amqp_port, "quiet")
    relay = Relay(args, DATABASE, "relay-idle",
                  ["--amqp", f"amqp://guest:guest@127.0.0.1:{args.amqp_port}/"],
                  ["--destinations", "quiet", "--heartbeat", "1"])

    def connections():
        return sum(1 for line in relay.lines() if line.startswith("connected to amqp"))

    def losses():
        return sum(1 for line in relay.lines() if line.startswith("lost amqp"))
    relay.start()
    try:
        wait_for("relay-idle connected", lambda: connections() == 1)
        time.sleep(IDLE_SECONDS)
        db.query("SELECT inbox.send('quiet', '{\"n\": 1}')")
        wait_for("the message after the idle time delivered", lambda: delivered(db, "quiet") == 1)
        if connections() != 1 or losses() != 0:
            fail(f"idle with heartbeats, the connection was not kept: {relay.lines()}")
        print(f"RabbitMQ: idle {IDLE_SECONDS} s with heartbeats every second, the connection "
              "kept and the next message published on it")
        subprocess.run([*rabbitmqctl, "close_all_connections", "closed by the test"],
                       check=True, stdout=subprocess.DEVNULL)
        wait_for("relay-idle to say it lost the connection closed while idle, and connect again",
                 lambda: losses() == 1 and connections() == 2)
        db.query("SELECT inbox.send('quiet', '{\"n\": 2}')")
        wait_for("the message after the idle loss delivered", lambda: delivered(db, "quiet") == 2)
    finally:
        if relay.stop(15) != 0:
            fail("relay-idle did not exit 0 on SIGTERM")
    print("RabbitMQ: a connection closed by the broker while idle said lost, made again, and "
          "the next message delivered")


def bad_conninfo(args):
    try:
        result = subprocess.run([args.relay, "--db", "no_such_option=1", "--amqp",
                                 f"amqp://guest:guest@127.0.0.1:{args.amqp_port}/"],
                                capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        fail("--db no_such_option=1: still running after 10 s, waiting for the database")
    if result.returncode != 2 or "no_such_option" not in result.stderr:
        fail(f"--db no_such_option=1: exit {result.returncode}, {result.stderr!r}")
    print("a --db libpq cannot parse: exit status 2")


def main():
    parser = scenario_parser()
    args = parser.parse_args()
    start_clock(90)
    db = create_database(args.pghost, DATABASE)
    _, rabbitmqctl = restart_commands(args.work)
    bad_conninfo(args)
    http_outage(args, db)
    http_closing_endpoint(args, db)
    refused_channel(args, db, rabbitmqctl)
    unpublishable(args, db)
    idle_heartbeats(args, db, rabbitmqctl)
    print("sink backoff: passed")


if __name__ == "__main__":
    main()
