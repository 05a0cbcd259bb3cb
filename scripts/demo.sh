#!/usr/bin/env bash
# The story inbox exists for, on a throwaway cluster: a 4,182 EUR payment message is delivered
# three times (a concurrent copy while the first delivery is still working, and a redelivery after
# it committed) and the invoice is paid exactly once. Leaves nothing running.
#   scripts/demo.sh [--install]
# --install (make demo): first builds this tree and installs it into the PostgreSQL of pg_config
# (PG_CONFIG=... names another), unless a Debian package owns the library installed there. The
# story plays against whatever inbox that PostgreSQL has.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
pg_config=${PG_CONFIG:-pg_config}

# make install over the library of a Debian package (postgresql-15-inbox) would modify dpkg's
# files behind its back (dpkg -V reports them), and the package's next upgrade or removal would
# replace or delete ours: refused, with the two ways out.
build_and_install() {
    local pkglibdir library owner
    pkglibdir=$("$pg_config" --pkglibdir)
    library=$pkglibdir/inbox.so
    if owner=$(dpkg -S "$library" 2>/dev/null); then
        owner=${owner%%:*}
        echo "make demo: $library belongs to the Debian package $owner," >&2
        echo "and installing this tree would overwrite the package's files. Either:" >&2
        echo "  - play the demo with the package's inbox:   scripts/demo.sh" >&2
        echo "  - or remove the package, then run make demo: apt remove $owner" >&2
        return 1
    fi
    echo "== building inbox (make -s)"
    make -s -C "$source_dir" all PG_CONFIG="$pg_config"
    echo "== installing it into $pkglibdir (make install, as root)"
    "$source_dir/scripts/as-root.sh" make -s -C "$source_dir" install PG_CONFIG="$pg_config"
}

case ${1:-} in
--install) build_and_install ;;
'') ;;
*)
    echo "usage: $0 [--install]" >&2
    exit 2
    ;;
esac

source "$source_dir/scripts/cluster.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-demo.XXXXXX")
chmod 711 "$work"   # the cluster user must reach its directory inside
trap 'cluster_stop; rm -rf "$work"' EXIT

echo "== starting a throwaway PostgreSQL cluster"
cluster_start "$("$pg_config" --bindir)" "$work/cluster"
sql() { cluster_psql -A -t "$@"; }

sql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE invoices (id text PRIMARY KEY, amount_due numeric NOT NULL, paid numeric NOT NULL DEFAULT 0);
CREATE TABLE payments (message_id text, invoice text, amount numeric, paid_at timestamptz DEFAULT now());
INSERT INTO invoices VALUES ('INV-2026-0042', 4182, 0);

-- The consumer's handler: books the payment. The gateway call makes it slow (2 s), long enough
-- for the broker's lock on the message to expire and a second instance to receive a copy.
CREATE FUNCTION apply_payment(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO payments (message_id, invoice, amount)
    VALUES (payload ->> 'message_id', payload ->> 'invoice', (payload ->> 'amount')::numeric);
    UPDATE invoices SET paid = paid + (payload ->> 'amount')::numeric WHERE id = payload ->> 'invoice';
    PERFORM pg_sleep(2);
END $$;
SQL

deliver="SELECT inbox.apply('billing', 'msg-7f3a9c', 'apply_payment(jsonb)',
    '{\"message_id\": \"msg-7f3a9c\", \"invoice\": \"INV-2026-0042\", \"amount\": 4182}')"
verdict() { if [ "$1" = t ]; then echo "processed"; else echo "duplicate, skipped"; fi; }

echo "== the message 'pay 4,182 EUR on INV-2026-0042' arrives"
echo "   instance A starts applying it (the payment gateway takes 2 s)"
sql -c "$deliver" >"$work/a.out" &
instance_a=$!
sleep 0.5
echo "   A's lock expires; the broker hands the same message to instance B, which waits for A"
sql -c "$deliver" >"$work/b.out" &
instance_b=$!
wait "$instance_a" "$instance_b"
echo "   instance A: $(verdict "$(cat "$work/a.out")")"
echo "   instance B: $(verdict "$(cat "$work/b.out")")"

echo "== an outbox relay resends the message after A committed"
echo "   redelivery: $(verdict "$(sql -c "$deliver")")"

payments=$(sql -c "SELECT count(*) FROM payments")
balance=$(sql -c "SELECT to_char(paid, 'FM999G990') || ' EUR paid, ' || to_char(amount_due - paid, 'FM999G990') || ' EUR due' FROM invoices")
echo "== result: 3 deliveries"
if [ "$payments" = 1 ]; then
    echo "   the payment was applied exactly once"
else
    echo "   DEMO FAILED: the payment was applied $payments times"
fi
echo "   final balance of INV-2026-0042: $balance"
[ "$payments" = 1 ]
