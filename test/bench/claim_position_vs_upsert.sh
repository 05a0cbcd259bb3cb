#!/usr/bin/env bash
# Streams, measured side by side in the same cluster, interleaved transaction by transaction
# (pgbench_compare.sh), synchronous_commit = off so that the comparison is of CPU, not of the
# disk:
#  1. inbox.claim_position against the guard a user would write by hand into an offsets table
#     of the application's: INSERT ... ON CONFLICT (consumer, stream) DO UPDATE SET position =
#     excluded.position WHERE position < excluded.position; one claim per transaction, over 100
#     streams, positions growing (microseconds since 1970), so that every claim moves its stream;
#  2. inbox.claim_positions of a polled batch of 500 positions against 500 calls of
#     inbox.claim_position in the same transaction (one statement): what the batch costs of the
#     one-by-one claims.
#   test/bench/claim_position_vs_upsert.sh [seconds-per-round=10] [rounds=7] [clients=1]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-7}
clients=${3:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"

now_us='(extract(epoch FROM clock_timestamp()) * 1000000)::bigint'
pgbench_script claim_position <<SQL
\set stream random(1, 100)
SELECT inbox.claim_position('totals', 'orders/' || :stream, $now_us);
SQL
pgbench_script hand_guard <<SQL
\set stream random(1, 100)
INSERT INTO app_offsets AS o (consumer, stream, position)
VALUES ('totals', 'orders/' || :stream, $now_us)
ON CONFLICT (consumer, stream) DO UPDATE SET position = excluded.position
WHERE o.position < excluded.position;
SQL
# 500 positions from a base that grows by more than 500 a transaction (microseconds * 1000).
pgbench_script batch <<SQL
\set stream random(1, 100)
SELECT inbox.claim_positions('batches', 'orders/' || :stream,
                             ARRAY(SELECT $now_us * 1000 + g FROM generate_series(0, 499) g));
SQL
pgbench_script one_by_one <<SQL
\set stream random(1, 100)
SELECT count(*) FILTER (WHERE inbox.claim_position('batches', 'orders/' || :stream, b + g) = 'next')
FROM (SELECT $now_us * 1000 AS b) base, generate_series(0, 499) g;
SQL

private_cluster_start "shared_buffers = '1GB'" "synchronous_commit = off" \
    "inbox.purge_worker = off"
cluster_psql >/dev/null <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE app_offsets (consumer text, stream text, position bigint NOT NULL,
                          PRIMARY KEY (consumer, stream));
SQL
echo "claim_position / the hand-written guard (one claim a transaction, $clients clients," \
    "${seconds} s rounds)"
pgbench_compare claim_position hand_guard
echo "claim_positions of 500 / 500 claim_position calls (a polled batch a transaction," \
    "$clients clients, ${seconds} s rounds)"
pgbench_compare batch one_by_one
