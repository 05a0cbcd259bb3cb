#!/usr/bin/env bash
# Does a claim cost the same on a full inbox as on an empty one? Two databases of one cluster:
# "full_inbox" holds N markers (test/bench/markers.sh: random UUID ids of 4 consumers, each with its
# own processed_at), "empty_inbox" none. pgbench runs 1 client claiming new random UUIDs for the same
# consumers, alternately in each database (full, empty, empty, full, ...), so that drift in the
# machine's load hits both alike; the ratio of each pair of runs, then the median and range over
# blocks of two rounds (median_block_ratio in pgbench_compare.sh): claim throughput on the full
# inbox / on the empty one.
#   test/bench/claim_full_inbox.sh [markers=20000000] [seconds-per-run=20] [rounds=8]
# shared_buffers = 256MB and synchronous_commit = off, the other settings PostgreSQL's defaults
# (more lines for postgresql.conf in the environment variable settings, one a line): the primary
# key of 20M markers (about 1 GB) does not fit in shared_buffers, as it would not on a real
# server holding 30 days of traffic. Each round also prints the full-page images and WAL bytes
# per claim (pg_stat_wal), where most of the difference goes. ids=uuid7 in the environment
# loads and claims time-ordered UUIDs instead (test/bench/markers.sh); layout=1.0 measures both
# databases at 1.0 instead, for comparison.
set -euo pipefail
markers=${1:-20000000}
seconds=${2:-20}
rounds=${3:-8}
ids=${ids:-uuid}
layout=${layout:-1.1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
mapfile -t extra_settings <<<"${settings:-}"
private_cluster_start "shared_buffers = '256MB'" "synchronous_commit = off" \
    "inbox.purge_worker = off" "${extra_settings[@]}"

for db in full_inbox empty_inbox; do
    sql postgres "CREATE DATABASE $db"
    sql "$db" "CREATE EXTENSION inbox VERSION '$layout'"
done
echo "loading $markers markers into database full_inbox..."
start=$(now_s)
# Loaded without waiting for the disk; measured with the settings above.
sql postgres "ALTER SYSTEM SET fsync = off"
sql postgres "ALTER SYSTEM SET full_page_writes = off"
sql postgres "SELECT pg_reload_conf()" >/dev/null
marker_insert "$layout" "$markers" "$ids" | cluster_psql -d full_inbox
sql postgres "ALTER SYSTEM RESET ALL"
sql postgres "SELECT pg_reload_conf()" >/dev/null
table=inbox.markers
[ "$layout" = 1.1 ] || table=inbox.messages
settle_markers full_inbox "$table"
echo "loaded in $(awk -v s="$start" -v e="$(now_s)" 'BEGIN { printf "%.0f", e - s }') s;" \
    "$(sql full_inbox "SELECT pg_size_pretty(pg_total_relation_size('$table'))") of markers," \
    "primary key $(sql full_inbox "SELECT pg_size_pretty(pg_relation_size('${table}_pkey'))")"

case $ids in
    uuid) new_id="gen_random_uuid()::text" ;;
    uuid7) new_id=$(uuid7_sql "clock_timestamp()") ;;
esac
cat >"$work/claim.sql" <<SQL
\set c random(0, 3)
SELECT inbox.claim('consumer-' || :c, $new_id);
SQL
chmod 644 "$work/claim.sql"
# One run in database $1; sets tps, and fpi and wal (full-page images and WAL bytes per claim,
# from pg_stat_wal: the runs take turns, so the cluster's WAL is theirs).
wal_now() { sql postgres "SELECT wal_fpi || ' ' || wal_bytes FROM pg_stat_wal"; }
claim_run() {
    local before after
    before=($(wal_now))
    tps=$(as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -M prepared \
        -c 1 -j 1 -T "$seconds" -f "$work/claim.sql" "$1" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    after=($(wal_now))
    local claims
    claims=$(awk -v t="$tps" -v s="$seconds" 'BEGIN { print t * s }')
    fpi=$(awk -v a="${after[0]}" -v b="${before[0]}" -v n="$claims" 'BEGIN { printf "%.2f", (a - b) / n }')
    wal=$(awk -v a="${after[1]}" -v b="${before[1]}" -v n="$claims" 'BEGIN { printf "%.0f", (a - b) / n }')
}

# A first run of each, not counted: the full inbox's hot pages come into the caches.
claim_run full_inbox
claim_run empty_inbox
ratios=()
for round in $(seq "$rounds"); do
    sides=(full_inbox empty_inbox)
    ((round % 2)) || sides=(empty_inbox full_inbox)
    for side in "${sides[@]}"; do
        claim_run "$side"
        eval "${side}_tps=$tps ${side}_fpi=$fpi ${side}_wal=$wal"
    done
    ratios+=("$(ratio "$full_inbox_tps" "$empty_inbox_tps")")
    printf 'round %d: full %6.0f tps (%s full-page images, %5s WAL bytes per claim)' "$round" \
        "$full_inbox_tps" "$full_inbox_fpi" "$full_inbox_wal"
    printf '  empty %6.0f tps (%s, %5s)  ratio %s\n' "$empty_inbox_tps" "$empty_inbox_fpi" \
        "$empty_inbox_wal" "${ratios[-1]}"
done
printf '%s\n' "${ratios[@]}" | median_block_ratio "claim on $markers markers ($ids ids, $layout) / on an empty inbox"
