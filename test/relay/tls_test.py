"""inbox-relay over TLS (amqps://): the broker's certificate is verified, its chain and its host
name, and a relay that cannot trust it publishes nothing; the relay shows a certificate of its
own to a broker that asks for one (docs/outbox.md, the relay's options).

The broker listens for AMQP over TLS with a certificate made out to localhost by a CA of the
test's own, and asks each client for a certificate that CA signed (test/relay/run.sh). Refused,
the messages left pending and untaken: a relay given a CA that did not sign the broker's
certificate; one that names the broker 127.0.0.1, a host the certificate is not for; one
without --amqp-ca, which trusts the system's CAs only; one that shows no certificate; one that
shows a certificate of another CA; one whose key is not its certificate's. Then a relay given the
CA and its certificate, naming localhost, delivers every message, once each, with its id.

Run as a scenario of test/relay/run.sh: test/relay/run.sh WORKDIR BINDIR tls_test.py"""

import os
import time

from harness import (Relay, create_database, declare_exchange, fail, read_queue,
                     scenario_parser, start_clock, wait_for)

DATABASE = "tls"
DESTINATION = "secured"
REFUSED_FOR_SECONDS = 2  # each untrusted relay runs this long after its first refusal


def amqps(host, port, *options):
    return ["--amqp", f"amqps://guest:guest@{host}:{port}/", "--destinations", DESTINATION,
            *options]


def identity(tls_dir, certificate, key=None):
    """The options that show the certificate named, with its own key or the one named."""
    return ["--amqp-cert", os.path.join(tls_dir, f"{certificate}.pem"),
            "--amqp-key", os.path.join(tls_dir, f"{key or certificate}.key")]


def untaken(db):
    return db.query("SELECT state, attempts FROM inbox.outbox WHERE destination = %s",
                    (DESTINATION,))


def refused(args, db, name, sink, reason):
    """The relay cannot connect or log in, says why, and takes nothing."""
    relay = Relay(args, DATABASE, name, sink)
    relay.start()
    try:
        wait_for(f"{name} to say it cannot reach the broker: {reason}",
                 lambda: any(line.startswith("cannot reach") and reason in line
                             for line in relay.lines()))
        time.sleep(REFUSED_FOR_SECONDS)
    finally:
        if relay.stop(15) != 0:
            fail(f"{name} did not exit 0 on SIGTERM")
    rows = untaken(db)
    if any(row != ("pending", 0) for row in rows):
        fail(f"{name}: (state, attempts) {rows}, expected every message pending and untaken")
    if any(line.startswith("published") or line.startswith("connected to amqps")
           for line in relay.lines()):
        fail(f"{name} connected to a broker it cannot trust: {relay.lines()}")


def main():
    args = scenario_parser().parse_args()
    start_clock(90)
    db = create_database(args.pghost, DATABASE)
    declare_exchange(args.amqp_port, DESTINATION)
    ids = {str(db.value("SELECT inbox.send(%s, %s::jsonb)", (DESTINATION, f'{{"n": {i}}}')))
           for i in range(5)}
    ca = os.path.join(args.tls_dir, "ca.pem")
    relay_identity = identity(args.tls_dir, "relay")
    refused(args, db, "relay-other-ca",
            amqps("localhost", args.amqps_port, "--amqp-ca",
                  os.path.join(args.tls_dir, "other-ca.pem"), *relay_identity),
            "SSL peer cert verification failed")
    refused(args, db, "relay-other-host",
            amqps("127.0.0.1", args.amqps_port, "--amqp-ca", ca, *relay_identity),
            "SSL hostname verification failed")
    refused(args, db, "relay-system-cas", amqps("localhost", args.amqps_port, *relay_identity),
            "SSL peer cert verification failed")
    print("TLS: refused by a relay with another CA, another host name, the system's CAs; "
          "nothing taken")
    refused(args, db, "relay-without-certificate",
            amqps("localhost", args.amqps_port, "--amqp-ca", ca), "certificate required")
    refused(args, db, "relay-certificate-of-other-ca",
            amqps("localhost", args.amqps_port, "--amqp-ca", ca,
                  *identity(args.tls_dir, "relay-other-ca")), "unknown ca")
    refused(args, db, "relay-wrong-key",
            amqps("localhost", args.amqps_port, "--amqp-ca", ca,
                  *identity(args.tls_dir, "relay", key="relay-other-ca")),
            "not the certificate's key")
    print("TLS: refused by the broker without the relay's certificate, with one of another CA; "
          "a key not the certificate's refused by the relay; nothing taken")

    relay = Relay(args, DATABASE, "relay-tls",
                  amqps("localhost", args.amqps_port, "--amqp-ca", ca, *relay_identity))
    relay.start()
    try:
        wait_for("the messages delivered over TLS",
                 lambda: db.value("SELECT count(*) FROM inbox.outbox WHERE destination = %s "
                                  "AND state = 'delivered'", (DESTINATION,)) == len(ids))
    finally:
        if relay.stop(15) != 0:
            fail("relay-tls did not exit 0 on SIGTERM")
    if not any(line.startswith("connected to amqps://guest@localhost:") for line in relay.lines()):
        fail(f"relay-tls did not say it connected over TLS: {relay.lines()}")
    arrived = sorted(properties.message_id
                     for _, properties, _ in read_queue(args.amqp_port, DESTINATION))
    if arrived != sorted(ids):
        fail(f"arrived over TLS: {arrived}, expected each of {sorted(ids)} once")
    print(f"TLS: {len(ids)} messages delivered over amqps:// with the broker's CA, once each")


if __name__ == "__main__":
    main()
