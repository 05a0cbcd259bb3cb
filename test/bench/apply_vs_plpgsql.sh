#!/usr/bin/env bash
# Throughput of inbox.apply against the same logic written by hand in PL/pgSQL (insert the marker
# with ON CONFLICT DO NOTHING, call the handler when it was new), and of inbox.claim against the
# bare INSERT ... ON CONFLICT statement. Same cluster, same handler, rounds interleaved (and the
# order alternated) so that machine noise hits both sides alike; prints each round and the
# median ratio.
#   test/bench/apply_vs_plpgsql.sh [seconds-per-run] [rounds] [clients]
# Needs the extension installed (make install).
set -euo pipefail
seconds=${1:-10}
rounds=${2:-5}
clients=${3:-2}

source "$(dirname "$0")/../../scripts/cluster.sh"
source "$(dirname "$0")/pgbench_compare.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
chmod 711 "$work"
trap 'cluster_stop; rm -rf "$work"' EXIT
cluster_start "$(pg_config --bindir)" "$work/cluster" "shared_preload_libraries = 'inbox'" \
    "shared_buffers = '1GB'" "max_wal_size = '4GB'" "synchronous_commit = off"

cluster_psql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int
$$;
CREATE FUNCTION apply_by_hand(p_consumer text, p_message_id text, payload jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inbox.messages (consumer, message_id) VALUES (p_consumer, p_message_id)
    ON CONFLICT (consumer, message_id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM credit(payload);
    RETURN true;
END $$;
SQL

# One message per transaction; ids drawn from a large space so that most are new and a few are
# duplicates, as in live traffic.
pgbench_script apply <<'SQL'
\set id random(1, 50000000)
\set account random(1, 1000)
SELECT inbox.apply('bench-apply', 'm-' || :id, 'credit(jsonb)', jsonb_build_object('account', :account::int, 'amount', 7));
SQL
pgbench_script by_hand <<'SQL'
\set id random(1, 50000000)
\set account random(1, 1000)
SELECT apply_by_hand('bench-hand', 'm-' || :id, jsonb_build_object('account', :account::int, 'amount', 7));
SQL
pgbench_script claim <<'SQL'
\set id random(1, 50000000)
SELECT inbox.claim('bench-claim', 'm-' || :id);
SQL
pgbench_script insert <<'SQL'
\set id random(1, 50000000)
INSERT INTO inbox.messages (consumer, message_id) VALUES ('bench-insert', 'm-' || :id)
ON CONFLICT (consumer, message_id) DO NOTHING;
SQL

echo "apply vs hand-written PL/pgSQL ($clients clients, ${seconds}s runs, $rounds rounds)"
pgbench_compare apply by_hand
echo "claim vs bare INSERT ... ON CONFLICT DO NOTHING"
pgbench_compare claim insert
