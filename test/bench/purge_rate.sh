#!/usr/bin/env bash
# How fast CALL inbox.purge() deletes expired markers, against the fastest purge a user could
# hand-write on 1.0's table: a loop of
#   DELETE FROM inbox.messages WHERE ctid = ANY (ARRAY (SELECT ctid FROM inbox.messages
#       WHERE processed_at < cutoff ORDER BY processed_at LIMIT 10000))
# over a B-tree on processed_at (which the benchmark adds to 1.0's table). Two databases of one
# cluster, one at 1.1 and one at 1.0, hold the same N expired markers (test/bench/markers.sh: 4
# consumers, random UUID ids, 31 days and more old, retention 30 days), reloaded before every
# measurement. Two ways to run each, measured alternately (1.1 first in odd rounds):
#   one transaction   BEGIN; CALL inbox.purge(); COMMIT   against the loop in one DO block
#   batch commits     CALL inbox.purge() (a commit after each batch, then a pause as long as
#                     the batch took, by design) against the loop in a procedure that commits
#                     after each batch
# Prints markers/s of each run, the ratio 1.1 / hand-written of each round, their median and
# range.
#   test/bench/purge_rate.sh [markers=1000000] [rounds=5]
set -euo pipefail
markers=${1:-1000000}
rounds=${2:-5}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" \
    "synchronous_commit = off" "inbox.purge_worker = off" "autovacuum = off"
marker_age_s=$((31 * 86400))

sql postgres "CREATE DATABASE purge_1_1"
sql purge_1_1 "CREATE EXTENSION inbox"
sql postgres "CREATE DATABASE purge_1_0"
sql purge_1_0 "CREATE EXTENSION inbox VERSION '1.0'"
cluster_psql -d purge_1_0 <"$source_dir/test/bench/hand_purge_1_0.sql"

reload() {
    local db=$1 layout=$2 tables=inbox.messages
    [ "$layout" = 1.0 ] || tables="inbox.markers, inbox.marker_details"
    sql "$db" "TRUNCATE $tables"
    marker_insert "$layout" "$markers" | cluster_psql -d "$db"
    settle_markers "$db" "$tables"
}

# Runs the statement in the database; prints the markers it deleted per second.
rate() {
    local db=$1 statement=$2 ms
    ms=$(cluster_psql -d "$db" -At -c '\timing on' -c "$statement" |
        sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
    [ "$(sql "$db" "SELECT count(*) FROM inbox.messages")" = 0 ] ||
        { echo "the purge in $db left markers" >&2; return 1; }
    awk -v n="$markers" -v ms="$ms" 'BEGIN { printf "%.0f", n / ms * 1000 }'
}

declare -A statement=(
    [transaction_1_1]="BEGIN; CALL inbox.purge(); COMMIT;"
    [transaction_1_0]="DO \$\$ BEGIN WHILE hand_purge_batch() > 0 LOOP END LOOP; END \$\$"
    [committing_1_1]="CALL inbox.purge()"
    [committing_1_0]="CALL hand_purge_committing()"
)

for mode in transaction committing; do
    ratios=()
    for round in $(seq "$rounds"); do
        sides=(1_1 1_0)
        ((round % 2)) || sides=(1_0 1_1)
        declare -A rates=()
        for side in "${sides[@]}"; do
            reload "purge_$side" "${side/_/.}"
            rates[$side]=$(rate "purge_$side" "${statement[${mode}_$side]}")
        done
        ratios+=("$(ratio "${rates[1_1]}" "${rates[1_0]}")")
        printf '%-11s round %d: inbox.purge %9s markers/s  hand-written on 1.0 %9s markers/s  ratio %s\n' \
            "$mode" "$round" "${rates[1_1]}" "${rates[1_0]}" "${ratios[-1]}"
    done
    printf '%s\n' "${ratios[@]}" | median_ratio "purge, $mode, inbox.purge / hand-written ctid loop on 1.0"
done
