#!/usr/bin/env bash
# Throughput of the outcome functions against what they replace, each pair interleaved
# transaction by transaction in one pgbench run per round (pgbench_compare.sh), so that the
# machine's load hits both sides alike; prints each round, the median and the range:
#   batch    inbox.claim_batch of 100 new ids, against the hand-written statement it replaces,
#            INSERT ... SELECT unnest(...) ON CONFLICT DO NOTHING RETURNING into a table of
#            (consumer text, message_id text, processed_at) keyed like 1.0's inbox.messages,
#            and against 100 inbox.claim calls in one statement;
#   receive  inbox.receive without a payload against inbox.claim, for new ids and for
#            duplicates (which receive answers with the stored result, if any).
# The ids of a batch are built the same way on every side (an array of 100 'm-' || n).
#   test/bench/outcomes.sh [seconds-per-run] [rounds] [clients]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-5}
clients=${3:-2}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "synchronous_commit = off"

cluster_psql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE processed (consumer text, message_id text, processed_at timestamptz NOT NULL DEFAULT now(),
                        PRIMARY KEY (consumer, message_id));
-- Committed markers for the duplicates: 100,000 ids each for receive and claim; as many rows in
-- the hand-written table, so that both start with indexes of the same depth.
SELECT count(*) FROM inbox.claim_batch('bench-receive', ARRAY(SELECT 'known-' || g FROM generate_series(1, 100000) g));
SELECT count(*) FROM inbox.claim_batch('bench-claim', ARRAY(SELECT 'known-' || g FROM generate_series(1, 100000) g));
INSERT INTO processed (consumer, message_id) SELECT 'old', 'old-' || g FROM generate_series(1, 200000) g;
SQL

# 100 ids per transaction from a space of 10^11 batches: practically all new.
ids='ARRAY(SELECT '"'"'m-'"'"' || (:batch::bigint * 100 + g) FROM pg_catalog.generate_series(1, 100) g)'
pgbench_script claim_batch <<SQL
\set batch random(1, 100000000000)
SELECT count(*) FROM inbox.claim_batch('bench-batch', $ids);
SQL
pgbench_script by_hand <<SQL
\set batch random(1, 100000000000)
WITH claimed AS (
    INSERT INTO processed (consumer, message_id) SELECT 'bench-hand', id FROM unnest($ids) AS id
    ON CONFLICT DO NOTHING RETURNING message_id)
SELECT count(*) FROM claimed;
SQL
pgbench_script claims <<SQL
\set batch random(1, 100000000000)
SELECT count(*) FROM unnest($ids) AS id WHERE inbox.claim('bench-claims', id);
SQL
pgbench_script receive <<'SQL'
\set id random(1, 100000000000)
SELECT outcome FROM inbox.receive('bench-receive', 'new-' || :id);
SQL
pgbench_script claim <<'SQL'
\set id random(1, 100000000000)
SELECT inbox.claim('bench-claim', 'new-' || :id);
SQL
pgbench_script receive_duplicate <<'SQL'
\set id random(1, 100000)
SELECT outcome FROM inbox.receive('bench-receive', 'known-' || :id);
SQL
pgbench_script claim_duplicate <<'SQL'
\set id random(1, 100000)
SELECT inbox.claim('bench-claim', 'known-' || :id);
SQL

# pgbench_compare, then the range of its ratios.
compare() {
    local output
    output=$(pgbench_compare "$1" "$2")
    echo "$output"
    sed -n 's/.*throughput ratio \([0-9.]*\)$/\1/p' <<<"$output" | sort -n |
        awk -v l="$1 / $2" '{r[NR] = $1} END {printf "range %s: %.3f - %.3f\n", l, r[1], r[NR]}'
}

echo "claim_batch of 100 new ids ($clients clients, ${seconds}s runs, $rounds rounds)"
compare claim_batch by_hand
compare claim_batch claims
echo "receive without a payload vs claim, one call per transaction"
compare receive claim
compare receive_duplicate claim_duplicate
