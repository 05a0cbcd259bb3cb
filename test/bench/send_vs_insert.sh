#!/usr/bin/env bash
# inbox.send against the same outgoing message written by hand into an outbox table of the
# application's (id, destination, key, headers, payload, created_at; its primary key only), same
# cluster, interleaved transaction by transaction (pgbench_compare.sh), one message per
# transaction with a key of 100 (send takes the key's lock; the hand-written insert orders
# nothing). Twice: with synchronous_commit = on, as an application that acknowledges after
# COMMIT runs, and off, where commits do not wait for the disk and the comparison is of CPU.
#   test/bench/send_vs_insert.sh [seconds-per-round=10] [rounds=7] [clients=1]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-7}
clients=${3:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"

pgbench_script send <<'SQL'
\set key random(1, 100)
SELECT inbox.send('orders', jsonb_build_object('order', :key::int, 'status', 'paid'),
                  'k-' || :key::int);
SQL
pgbench_script insert <<'SQL'
\set key random(1, 100)
INSERT INTO app_outbox (destination, key, payload)
VALUES ('orders', 'k-' || :key::int, jsonb_build_object('order', :key::int, 'status', 'paid'));
SQL

private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "inbox.purge_worker = off"
cluster_psql >/dev/null <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE app_outbox (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                         created_at timestamptz NOT NULL DEFAULT now(),
                         destination text NOT NULL, key text, headers jsonb, payload jsonb);
SQL
for commit in on off; do
    cluster_psql -qc "ALTER SYSTEM SET synchronous_commit = $commit" -c 'SELECT pg_reload_conf()' \
        >/dev/null
    echo "send / hand-written INSERT into an outbox table (synchronous_commit = $commit," \
        "$clients clients, ${seconds} s rounds)"
    pgbench_compare send insert
done
