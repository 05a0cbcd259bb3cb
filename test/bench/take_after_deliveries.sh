#!/usr/bin/env bash
# What the messages delivered since the outbox's last VACUUM cost each relay_take: their entries
# stay in the index of undelivered messages (a partial index keeps an entry until VACUUM removes
# it), at its start, and a take's scan in send order walks over them before it reaches the first
# pending message. Delivers D messages (sent, taken and marked done in rounds of 10,000, the
# default retention keeping them; autovacuum off), sends 2,000 more, then prints, in ms, what
# reaching the first pending message in send order takes (the scan a take starts with, its
# execution time as EXPLAIN ANALYZE gives it) and what five batches take (take and done of 500);
# then the same after a VACUUM, five batches later.
#   test/bench/take_after_deliveries.sh [D=200000]
set -euo pipefail
delivered=${1:-200000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "synchronous_commit = off" "inbox.purge_worker = off" "autovacuum = off"
cluster_psql -c "CREATE EXTENSION inbox" >/dev/null
for ((sent = 0; sent < delivered; sent += 10000)); do
    cluster_psql -q >/dev/null <<'SQL'
SELECT count(inbox.send('bench', '{"order": 1}')) FROM generate_series(1, 10000);
SELECT inbox.relay_done(ARRAY(SELECT id FROM inbox.relay_take('bench', 10000)));
SQL
done
sql postgres "SELECT count(inbox.send('bench', '{\"order\": 1}')) FROM generate_series(1, 2000)" \
    >/dev/null
batch_ms() {
    cluster_psql -c '\timing on' \
        -c "SELECT inbox.relay_done(ARRAY(SELECT id FROM inbox.relay_take('bench', 500)))" |
        sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
first_pending_ms() {
    sql postgres "EXPLAIN (ANALYZE, TIMING OFF) SELECT ordinal FROM inbox.outbox_messages
                  WHERE delivered_at IS NULL ORDER BY ordinal LIMIT 1" |
        sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p'
}
measure() {
    local label=$1
    echo "$label: first pending $(first_pending_ms) $(first_pending_ms) $(first_pending_ms);" \
        "batches $(batch_ms) $(batch_ms) $(batch_ms) $(batch_ms) $(batch_ms)"
}
echo "PostgreSQL $(sql postgres 'SHOW server_version'), ms:"
measure "$delivered delivered since the last VACUUM"
sql postgres "VACUUM inbox.outbox_messages"
for _ in 1 2 3 4 5; do batch_ms >/dev/null; done
measure "after VACUUM"
