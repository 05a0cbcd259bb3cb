#!/usr/bin/env bash
# How long `SELECT * FROM inbox.stats` takes on a large inbox, and how close its `retained` is to
# the exact count. Default: 20,000,000 markers over 20 consumers plus one small consumer (whose
# count is exact); a throwaway cluster, several GB of disk and a few minutes to load.
#   test/bench/stats_view_20m.sh [markers]
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
markers=${1:-20000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "fsync = off" "synchronous_commit = off" "max_wal_size = '20GB'" \
    "autovacuum = off" "shared_buffers = '512MB'"

echo "loading $markers markers"
cluster_psql -c 'CREATE EXTENSION inbox' -c "
    INSERT INTO inbox.messages (consumer, message_id, processed_at)
    SELECT 'consumer-' || g % 20, 'message-' || g, now() - (g % 2592000) * interval '1 second'
    FROM generate_series(1, $markers) g" -c "
    INSERT INTO inbox.messages (consumer, message_id)
    SELECT 'small-consumer', 'message-' || g FROM generate_series(1, 500) g" \
    -c 'VACUUM ANALYZE inbox.messages'
cluster_psql -c "SELECT pg_size_pretty(pg_total_relation_size('inbox.messages')) AS inbox_size"

echo "SELECT * FROM inbox.stats, 20 runs:"
echo 'SELECT * FROM inbox.stats;' >"$work/view.sql"
chmod 644 "$work/view.sql"
as_cluster_user pgbench -h "$cluster_dir" -U postgres -n -t 20 -f "$work/view.sql" postgres |
    grep -E 'latency average'

echo "retained against the exact count (the exact count itself is the slow part):"
cluster_psql -c "
    SELECT s.consumer, s.retained, e.exact,
           round(100.0 * (s.retained - e.exact) / e.exact, 2) AS error_percent
    FROM inbox.stats s
    JOIN (SELECT consumer, count(*) AS exact FROM inbox.messages GROUP BY consumer) e
      ON e.consumer = s.consumer
    ORDER BY s.consumer"
