#!/usr/bin/env bash
# What `SELECT * FROM inbox.stats` costs on a large inbox loaded a moment ago, before any ANALYZE
# (autovacuum off: the planner's statistics still describe the empty table) and after one, and
# how close its `retained` is to the exact count (which reads no planner statistics). Default:
# 20,000,000 markers (test/bench/markers.sh: random UUID ids of 20 consumers, each with its own
# processed_at) plus a small consumer of 500 (whose count is exact); a throwaway cluster, about
# 3 GB of disk and minutes to load.
#   test/bench/stats_view_20m.sh [markers=20000000]
set -euo pipefail
markers=${1:-20000000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
private_cluster_start "fsync = off" "synchronous_commit = off" "max_wal_size = '20GB'" \
    "autovacuum = off" "shared_buffers = '512MB'" "inbox.purge_worker = off"

sql postgres "CREATE EXTENSION inbox"
sql postgres "ANALYZE inbox.markers"
echo "loading $markers markers..."
marker_consumers=20 marker_insert 1.1 "$markers" | cluster_psql
cluster_psql -c "INSERT INTO inbox.messages (consumer, message_id)
                 SELECT 'small-consumer', 'message-' || g FROM generate_series(1, 500) g"
cluster_psql -c "SELECT pg_size_pretty(pg_total_relation_size('inbox.markers')) AS markers_size,
                        reltuples AS planner_reltuples
                 FROM pg_class WHERE oid = 'inbox.markers'::regclass"

echo 'SELECT * FROM inbox.stats;' >"$work/view.sql"
chmod 644 "$work/view.sql"
# The planner's statistics decide whether PostgreSQL compiles the query with JIT first
# (jit_above_cost): the view with JIT as configured, and without.
echo "the planner's estimate of the view's cost: $(sql postgres "EXPLAIN SELECT * FROM inbox.stats" |
    sed -n '1s/.*\.\.\([0-9.]*\) .*/\1/p'), jit_above_cost $(sql postgres "SHOW jit_above_cost")"
for jit in on off; do
    echo "SELECT * FROM inbox.stats, 20 runs, jit = $jit:"
    as_cluster_user env PGOPTIONS="-c jit=$jit" pgbench -h "$cluster_dir" -U postgres -n -t 20 \
        -f "$work/view.sql" postgres | grep -E 'latency average'
done

echo "after ANALYZE (autovacuum's), with JIT as configured:"
sql postgres "ANALYZE inbox.markers, inbox.consumer_registry"
as_cluster_user pgbench -h "$cluster_dir" -U postgres -n -t 20 -f "$work/view.sql" postgres |
    grep -E 'latency average'

echo "retained against the exact count (the exact count is the slow part):"
cluster_psql -c "
    SELECT s.consumer, s.retained, e.exact,
           round(100.0 * (s.retained - e.exact) / e.exact, 2) AS error_percent,
           s.oldest_processed_at = e.oldest AS oldest_exact
    FROM inbox.stats s
    JOIN (SELECT consumer, count(*) AS exact, min(processed_at) AS oldest
          FROM inbox.messages GROUP BY consumer) e ON e.consumer = s.consumer
    ORDER BY s.consumer"
