#!/usr/bin/env bash
# What the messages delivered since the outbox's last VACUUM cost a relay's takes. A delivered
# message's entry stays in the index of undelivered messages until VACUUM removes it, at the
# index's start: a scan from the start walks over every one before it reaches the first pending
# message (inbox.outbox_stats counts that way); relay_take starts at inbox.outbox_scan_floor.
# Delivers D messages (sent, taken and marked done in rounds of 10,000, the default retention
# keeping them; autovacuum off) and sends 10,000 more. Then, in one session as a relay has it,
# five takes of 500, each marked done in its transaction: the take's time in ms and the pages of
# the undelivered index it read (a count that the machine's load does not change), as "ms/pages"
# (the session's first take plans its statements: the planner looks for the index's lowest
# value, across the same entries). Then what a scan from the start takes to
# reach the first pending message (EXPLAIN ANALYZE's execution time, ms). The same after a
# VACUUM, in a new session.
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
sql postgres "SELECT count(inbox.send('bench', '{\"order\": 1}')) FROM generate_series(1, 10000)" \
    >/dev/null

takes() {
    for _ in 1 2 3 4 5; do
        cat <<'SQL'
BEGIN;
\timing on
SELECT array_agg(id) AS ids FROM inbox.relay_take('bench', 500) \gset
\timing off
SELECT pg_stat_get_xact_blocks_fetched('inbox.outbox_messages_undelivered'::regclass);
SELECT inbox.relay_done(:'ids');
COMMIT;
SQL
    done | cluster_psql -At | awk '/^Time:/ { ms = $2; n = 0; next } ms != "" && ++n == 1 {
        printf "%s/%d ", ms, $1 - pages; pages = $1; ms = "" }'
}
first_pending_ms() {
    sql postgres "EXPLAIN (ANALYZE, TIMING OFF) SELECT ordinal FROM inbox.outbox_messages
                  ORDER BY ordinal LIMIT 1" |
        sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p'
}
measure() {
    echo "$1: takes (ms/index pages) $(takes); from the index's start" \
        "$(first_pending_ms) $(first_pending_ms) $(first_pending_ms)"
}
echo "PostgreSQL $(sql postgres 'SHOW server_version'):"
measure "$delivered delivered since the last VACUUM"
sql postgres "VACUUM inbox.outbox_messages"
measure "after VACUUM"
