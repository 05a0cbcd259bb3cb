#!/usr/bin/env bash
# How the purge's cost grows with bursts: markers claimed in one second (or a backlog drained in
# a few), against the same markers spread over time, and against the hand-written purge of
# test/bench/purge_rate.sh (batches of 10,000 of a ctid DELETE over a B-tree on processed_at, on
# 1.0's table). For each load, two databases of one cluster hold the same expired markers (31 days
# old, retention 30 days), reloaded before every measurement, the two sides alternating:
#   burst N      N markers of one consumer in one second
#   backlog N    N markers of one consumer at 20,000 a second (claim_batch draining a backlog)
#   spread N     N markers of 4 consumers at 100 a second
# Each in one transaction (BEGIN; CALL inbox.purge(); COMMIT against the loop in a DO block) and
# committing after each batch (CALL inbox.purge() against a procedure with COMMIT). Committing,
# inbox.purge pauses after each batch as long as the batch took (by design, to leave the machine
# to live traffic): the script prints the wall time and the backend's CPU time (user + system,
# /proc/PID/stat; the pause is sleep, the markers are in shared buffers), and the ratios of both.
# Prints microseconds per marker, so that a constant across N is linear.
#   test/bench/purge_bursts.sh [sizes="100000 200000 400000"] [rounds=1]
set -euo pipefail
sizes=${1:-100000 200000 400000}
rounds=${2:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" \
    "synchronous_commit = off" "inbox.purge_worker = off" "autovacuum = off"
marker_age_s=$((31 * 86400))
clock_ticks=$(getconf CLK_TCK)

sql postgres "CREATE DATABASE purge_1_2"
sql purge_1_2 "CREATE EXTENSION inbox"
sql postgres "CREATE DATABASE purge_1_0"
sql purge_1_0 "CREATE EXTENSION inbox VERSION '1.0'"
cluster_psql -d purge_1_0 <"$source_dir/test/bench/hand_purge_1_0.sql"

# load SHAPE N: the markers' consumers and rate
load_shape() {
    case $1 in
        burst) marker_consumers=1 marker_rate=100000000 ;;
        backlog) marker_consumers=1 marker_rate=20000 ;;
        spread) marker_consumers=4 marker_rate=100 ;;
    esac
}

reload() {
    # LAYOUT: 1.0, or 1.1 (the compact tables, which 1.2 keeps)
    local db=$1 layout=$2 count=$3 tables=inbox.messages
    [ "$layout" = 1.0 ] || tables="inbox.markers, inbox.marker_details"
    sql "$db" "TRUNCATE $tables"
    marker_insert "$layout" "$count" | cluster_psql -d "$db"
    settle_markers "$db" "$tables"
}

# Runs the statement in the database; prints its wall and CPU milliseconds.
measure() {
    local db=$1 statement=$2 cpu="SELECT split_part(pg_read_file('/proc/self/stat'), ') ', 2)"
    cluster_psql -d "$db" -At -c "$cpu" -c '\timing on' -c "$statement" -c '\timing off' -c "$cpu" |
        awk -v tick="$clock_ticks" '
            /^Time: / { wall = $2 }
            / / && !/^Time/ { split($0, f, " "); cpu[++n] = f[12] + f[13] }
            END { printf "%.1f %.1f\n", wall, (cpu[2] - cpu[1]) * 1000 / tick }'
    [ "$(sql "$db" "SELECT count(*) FROM inbox.messages")" = 0 ] ||
        { echo "the purge in $db left markers" >&2; return 1; }
}

declare -A statement=(
    [transaction_1_2]="BEGIN; CALL inbox.purge(); COMMIT;"
    [transaction_1_0]="DO \$\$ BEGIN WHILE hand_purge_batch() > 0 LOOP END LOOP; END \$\$"
    [committing_1_2]="CALL inbox.purge()"
    [committing_1_0]="CALL hand_purge_committing()"
)

printf '%-8s %8s %-11s %5s | %-27s | %-27s | %s\n' load markers mode round \
    "inbox.purge us/marker" "hand-written us/marker" "ratio of rates (wall, cpu)"
printf '%-8s %8s %-11s %5s | %13s %13s | %13s %13s |\n' "" "" "" "" wall cpu wall cpu
for shape in burst backlog spread; do
    load_shape "$shape"
    for count in $sizes; do
        for mode in transaction committing; do
            for round in $(seq "$rounds"); do
                sides=(1_2 1_0)
                ((round % 2)) || sides=(1_0 1_2)
                declare -A wall=() cpu=()
                for side in "${sides[@]}"; do
                    reload "purge_$side" "$([ "$side" = 1_0 ] && echo 1.0 || echo 1.1)" "$count"
                    result=$(measure "purge_$side" "${statement[${mode}_$side]}")
                    read -r "wall[$side]" "cpu[$side]" <<<"$result"
                done
                awk -v s="$shape" -v n="$count" -v m="$mode" -v r="$round" \
                    -v w2="${wall[1_2]}" -v c2="${cpu[1_2]}" -v w0="${wall[1_0]}" -v c0="${cpu[1_0]}" \
                    'BEGIN { printf "%-8s %8d %-11s %5d | %13.2f %13.2f | %13.2f %13.2f | %.2f, %.2f\n",
                             s, n, m, r, w2 * 1000 / n, c2 * 1000 / n, w0 * 1000 / n, c0 * 1000 / n,
                             w0 / w2, (c2 > 0 ? c0 / c2 : 0) }'
            done
        done
    done
done
