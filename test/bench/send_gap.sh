#!/usr/bin/env bash
# What the gap between inbox.send and a hand-written INSERT (send_vs_insert.sh) is made of: the
# same message written by hand with, one step at a time, what a send does besides, each step's
# throughput against the plain INSERT, interleaved transaction by transaction in one pgbench run
# per round (pgbench_compare.sh's method, with five scripts), one message per transaction with a
# key of 100:
#   insert    the application's outbox table, its primary key only (send_vs_insert.sh's)
#   indexed   a table with the outbox's columns that the indexes read, an ordinal from a
#             sequence and the relay's two indexes (messages in order; head of a key, partial)
#   notified  indexed, and NOTIFY at commit (pg_notify in the same statement)
#   locked    notified, and the key's transaction-level advisory lock: all that a send does,
#             written in SQL
#   send      inbox.send
# Twice: with synchronous_commit = on and off.
#   test/bench/send_gap.sh [seconds-per-round=10] [rounds=5] [clients=1]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-5}
clients=${3:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"

pgbench_script insert <<'SQL'
\set key random(1, 100)
INSERT INTO app_outbox (destination, key, payload)
VALUES ('orders', 'k-' || :key::int, jsonb_build_object('order', :key::int, 'status', 'paid'));
SQL
pgbench_script indexed <<'SQL'
\set key random(1, 100)
INSERT INTO app_outbox_indexed (destination, key, payload)
VALUES ('orders', 'k-' || :key::int, jsonb_build_object('order', :key::int, 'status', 'paid'));
SQL
pgbench_script notified <<'SQL'
\set key random(1, 100)
WITH sent AS (INSERT INTO app_outbox_indexed (destination, key, payload)
              VALUES ('orders', 'k-' || :key::int,
                      jsonb_build_object('order', :key::int, 'status', 'paid'))
              RETURNING destination)
SELECT pg_notify('app_outbox', destination) FROM sent;
SQL
pgbench_script locked <<'SQL'
\set key random(1, 100)
WITH locked AS (SELECT pg_advisory_xact_lock(hashtextextended('6/orders' || 'k-' || :key::int, 1))),
     sent AS (INSERT INTO app_outbox_indexed (destination, key, payload)
              VALUES ('orders', 'k-' || :key::int,
                      jsonb_build_object('order', :key::int, 'status', 'paid'))
              RETURNING destination)
SELECT pg_notify('app_outbox', destination) FROM locked, sent;
SQL
pgbench_script send <<'SQL'
\set key random(1, 100)
SELECT inbox.send('orders', jsonb_build_object('order', :key::int, 'status', 'paid'),
                  'k-' || :key::int);
SQL

private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "inbox.purge_worker = off"
cluster_psql >/dev/null <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE app_outbox (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                         created_at timestamptz NOT NULL DEFAULT now(),
                         destination text NOT NULL, key text, headers jsonb, payload jsonb);
CREATE SEQUENCE app_outbox_ordinal;
CREATE TABLE app_outbox_indexed (ordinal bigint NOT NULL DEFAULT nextval('app_outbox_ordinal'),
                                 created_at timestamptz NOT NULL DEFAULT now(),
                                 id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                                 destination text NOT NULL, key text, headers jsonb,
                                 payload jsonb);
CREATE INDEX ON app_outbox_indexed (ordinal);
CREATE INDEX ON app_outbox_indexed (destination, key, ordinal) WHERE key IS NOT NULL;
SQL
steps=(indexed notified locked send)
for commit in on off; do
    cluster_psql -qc "ALTER SYSTEM SET synchronous_commit = $commit" -c 'SELECT pg_reload_conf()' \
        >/dev/null
    echo "each step / hand-written INSERT (synchronous_commit = $commit, $clients clients," \
        "${seconds} s rounds)"
    declare -A ratios=()
    for round in $(seq "$rounds"); do
        latencies=($(pgbench_latencies postgres -T "$seconds" --random-seed="$round" \
            -f "$work/insert.sql@1" -f "$work/indexed.sql@1" -f "$work/notified.sql@1" \
            -f "$work/locked.sql@1" -f "$work/send.sql@1"))
        line="  round $round: insert ${latencies[0]} ms"
        for i in "${!steps[@]}"; do
            ratios[${steps[$i]}]+="$(ratio "${latencies[0]}" "${latencies[$((i + 1))]}") "
            line+=", ${steps[$i]} ${latencies[$((i + 1))]} ms"
        done
        echo "$line"
    done
    for step in "${steps[@]}"; do
        tr ' ' '\n' <<<"${ratios[$step]}" | grep . | median_ratio "$step / insert"
    done
    unset ratios
done
