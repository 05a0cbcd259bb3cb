#!/usr/bin/env bash
# How long ALTER EXTENSION inbox UPDATE takes from 1.0 to 1.1, per million markers, and what it
# locks. A database at 1.0 holds N markers (test/bench/markers.sh: random UUID ids of 4
# consumers, each with its own processed_at, loaded into 1.0's table with its indexes); the
# update runs in a transaction of its own, and before its COMMIT the same session lists the
# locks it holds on the extension's tables (held until the commit). A second session meanwhile
# reads inbox.messages and claims, to show what waits.
#   test/bench/update_from_1_0.sh [markers=1000000]
set -euo pipefail
markers=${1:-1000000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" \
    "inbox.purge_worker = off"

sql postgres "CREATE EXTENSION inbox VERSION '1.0'"
echo "loading $markers markers into 1.0's table..."
marker_insert 1.0 "$markers" | cluster_psql
settle_markers postgres inbox.messages
echo "1.0: $(sql postgres "SELECT pg_size_pretty(pg_total_relation_size('inbox.messages'))") of markers"

# A reader and a claim started 0.3 s into the update: how long each waits.
waiter() {
    sleep 0.3
    local start
    start=$(now_s)
    sql postgres "$1" >/dev/null
    awk -v s="$start" -v e="$(now_s)" -v what="$2" 'BEGIN { printf "  %s waited %.1f s\n", what, e - s }'
}
waiter "SELECT count(*) FROM (SELECT * FROM inbox.messages LIMIT 10) m" "a reader of inbox.messages" \
    >"$work/reader.out" &
waiter "SELECT inbox.claim('consumer-0', 'during-the-update')" "a claim" >"$work/claim.out" &

# The relations of 1.0 that other sessions use, by OID: the update renames and drops the table.
sql postgres "CREATE TABLE relations_1_0 AS SELECT oid, relname FROM pg_class
              WHERE relnamespace = 'inbox'::regnamespace AND relkind IN ('r', 'v')"
cluster_psql -v ON_ERROR_STOP=1 <<'SQL'
\timing on
BEGIN;
ALTER EXTENSION inbox UPDATE;
\timing off
\echo the strongest lock the update holds until it commits, on each relation of 1.0:
SELECT r.relname AS relation_of_1_0,
       (array_agg(l.mode ORDER BY array_position(ARRAY['AccessExclusiveLock', 'ExclusiveLock',
           'ShareRowExclusiveLock', 'ShareLock', 'ShareUpdateExclusiveLock', 'RowExclusiveLock',
           'RowShareLock', 'AccessShareLock'], l.mode)))[1] AS strongest_lock
FROM relations_1_0 r JOIN pg_locks l ON l.relation = r.oid
WHERE l.pid = pg_backend_pid() AND l.granted
GROUP BY r.relname ORDER BY 1;
COMMIT;
SQL
wait
cat "$work/reader.out" "$work/claim.out"
echo "1.1: $(sql postgres "SELECT count(*) FROM inbox.messages") markers," \
    "$(sql postgres "SELECT pg_size_pretty(pg_total_relation_size('inbox.markers'))")"
