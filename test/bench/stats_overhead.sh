#!/usr/bin/env bash
# The hot-path cost of the claim counters: the same pgbench traffic with inbox.track_stats on
# and off (set per connection through PGOPTIONS) in one throwaway cluster. In each round the
# settings run side by side, one pgbench each, for the same seconds, so that both see the same
# load from the rest of the machine; a second pgbench with counting off runs beside them as a
# control: the ratio off / off shows how much the machine alone moves a ratio. Two kinds of
# claims:
#   new         first deliveries: counted as pending, published by the commit callback
#   duplicate   repeats of committed markers: counted in shared memory when answered
# Prints tps per round and the median ratios on / off (1.000 = no cost) and off / off.
#   test/bench/stats_overhead.sh [rounds] [seconds per round] [clients per setting]
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${1:-10}
seconds=${2:-5}
clients=${3:-1}
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "fsync = off" "synchronous_commit = off" "max_wal_size = '4GB'"

# Four consumers; 1,000 committed markers each for the duplicate traffic.
cluster_psql -c 'CREATE EXTENSION inbox' -c "
    INSERT INTO inbox.messages (consumer, message_id)
    SELECT 'bench-' || c, 'known-' || m FROM generate_series(1, 4) c, generate_series(1, 1000) m"
cat >"$work/new.sql" <<'SQL'
\set c random(1, 4)
\set m random(1, 1000000000000)
SELECT inbox.claim('bench-' || :c, 'new-' || :m);
SQL
cat >"$work/duplicate.sql" <<'SQL'
\set c random(1, 4)
\set m random(1, 1000)
SELECT inbox.claim('bench-' || :c, 'known-' || :m);
SQL
chmod 644 "$work"/*.sql

run() {  # run KIND on|off NAME: pgbench in the background, its report in $work/KIND-NAME.out
    as_cluster_user env PGOPTIONS="-c inbox.track_stats=$2" pgbench -h "$cluster_dir" -U postgres \
        -n -M prepared -c "$clients" -j "$clients" -T "$seconds" -f "$work/$1.sql" postgres \
        >"$work/$1-$3.out" 2>&1 &
}
tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/$1-$2.out"; }

summary() {  # summary LABEL RATIO...: median and range
    local label=$1
    shift
    printf '%s\n' "$@" | median_summary '  %s: median %.3f (range %.3f - %.3f)\n' "$label"
}

for kind in new duplicate; do
    echo "$kind claims: $rounds rounds of ${seconds}s, $clients client(s) per pgbench, side by side"
    ratios=()
    controls=()
    for round in $(seq "$rounds"); do
        run "$kind" on on
        run "$kind" off off
        run "$kind" off control
        wait
        on=$(tps "$kind" on)
        off=$(tps "$kind" off)
        control=$(tps "$kind" control)
        ratios+=("$(ratio "$on" "$off")")
        controls+=("$(ratio "$control" "$off")")
        printf '  round %d: on %6.0f tps, off %6.0f tps, control (off) %6.0f tps\n' \
            "$round" "$on" "$off" "$control"
    done
    summary "$kind claims, ratio on / off" "${ratios[@]}"
    summary "$kind claims, control ratio off / off" "${controls[@]}"
done
cluster_psql -c 'SELECT consumer, applied, duplicates FROM inbox.stats ORDER BY consumer'
