#!/usr/bin/env bash
# apply with its handler in PL/pgSQL, in SQL, and in SQL with a standard body (BEGIN ATOMIC),
# against the same logic as one hand-written statement (test/bench/hot_path_statements.sh), in
# the server's time on CPU per transaction. Each round runs each statement N times in a session
# of its own (prepared, a transaction each), and reads the backend's time on CPU
# (/proc/self/schedstat) before and after; the rounds interleave the statements. Time on CPU
# leaves out what throughput counts on a loaded machine (the waits for a core, which dilute the
# difference towards 1), so the ratios stay those of an unloaded server bound by its CPU.
#   test/bench/apply_handler_cpu.sh [N=5000] [rounds=5]
set -euo pipefail
calls=${1:-5000}
rounds=${2:-5}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/hot_path_statements.sh"
private_cluster_start "shared_buffers = '1GB'" "synchronous_commit = off" "inbox.purge_worker = off"
cluster_psql -f "$source_dir/test/bench/hot_path_setup.sql" >/dev/null
echo "PostgreSQL $(cluster_psql -At -c 'SHOW server_version')"

# Nanoseconds on CPU per transaction of statement $1, executed $calls times in one session.
cpu_per_transaction() {
    {
        echo "PREPARE s AS ${statement[$1]};"
        echo "SELECT split_part(pg_read_file('/proc/self/schedstat'), ' ', 1) AS before \\gset"
        echo '\o /dev/null'
        yes 'EXECUTE s;' | head -n "$calls"
        echo '\o'
        echo "SELECT (split_part(pg_read_file('/proc/self/schedstat'), ' ', 1)::bigint - :before) / $calls;"
    } | cluster_psql -At
}

sides=(apply_plpgsql apply_sql apply_sql_atomic statement)
declare -A cpu
for round in $(seq "$rounds"); do
    line="round $round:"
    for name in "${sides[@]}"; do
        cpu[$name,$round]=$(cpu_per_transaction "$name")
        line+=$(printf '  %s %.1f us' "$name" "$(awk -v ns="${cpu[$name,$round]}" 'BEGIN { print ns / 1000 }')")
    done
    echo "$line"
done
# The statement's CPU over apply's: the throughput ratio apply / statement of a server bound by
# its CPU.
for name in apply_plpgsql apply_sql apply_sql_atomic; do
    for round in $(seq "$rounds"); do
        ratio "${cpu[statement,$round]}" "${cpu[$name,$round]}"
        echo
    done | median_summary 'median %s: %.3f (range %.3f - %.3f, %d rounds)\n' "statement CPU / $name CPU"
done
