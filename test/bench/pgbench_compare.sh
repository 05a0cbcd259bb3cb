# Interleaved pgbench comparisons on a cluster started with scripts/cluster.sh. Sourced by the
# benchmarks after private_cluster.sh; expects $work, $seconds, $rounds and $clients.
#   pgbench_script NAME < script        writes $work/NAME.sql
#   pgbench_compare OURS THEIRS         $rounds rounds; prints each and the median ratio
#   pgbench_latencies DATABASE OPTION ...
#                                       one pgbench run in DATABASE (-M prepared, $clients
#                                       clients) with the options given, of two scripts or more:
#                                       each script's mean latency in ms, a line each, in the
#                                       order of the -f options
#   median_ratio LABEL < ratios         prints the median and the range of one ratio a line
#   median_block_ratio LABEL < ratios   the same of the geometric means of two rounds in a row, for
#                                       runs whose order alternates (AB, BA, AB, ...): on a shared
#                                       machine the first and second run of a round can differ
#                                       systematically, and a block of two rounds cancels that
#
# Each round is ONE pgbench run in which every transaction picks OURS or THEIRS at random, so
# both share every moment of the machine's load; pgbench reports each script's mean latency, and
# the throughput ratio OURS / THEIRS is the inverse ratio of the latencies.

pgbench_script() {
    cat >"$work/$1.sql"
    chmod 644 "$work/$1.sql"
}

pgbench_compare() {
    local ours=$1 theirs=$2 round latencies
    local ratios=()
    for round in $(seq "$rounds"); do
        latencies=($(pgbench_latencies postgres -T "$seconds" --random-seed="$round" \
            -f "$work/$ours.sql@1" -f "$work/$theirs.sql@1")) || return 1
        ratios+=("$(awk -v a="${latencies[0]}" -v b="${latencies[1]}" 'BEGIN {printf "%.6f", b / a}')")
        printf '  round %d: %-8s %.3f ms  %-8s %.3f ms  throughput ratio %.3f\n' "$round" \
            "$ours" "${latencies[0]}" "$theirs" "${latencies[1]}" "${ratios[-1]}"
    done
    printf '%s\n' "${ratios[@]}" | median_ratio "$ours / $theirs"
}

pgbench_latencies() {
    local database=$1 output latencies option scripts=0
    shift
    for option in "$@"; do [ "$option" = -f ] && scripts=$((scripts + 1)); done
    output=$(as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n \
        -M prepared -c "$clients" -j "$clients" "$@" "$database" 2>&1)
    # " - latency average = X ms", once per script, in the order of the -f options
    latencies=$(sed -n 's/^ - latency average = \([0-9.]*\) ms$/\1/p' <<<"$output")
    if (($(grep -c . <<<"$latencies") != scripts)); then
        echo "pgbench failed:" >&2
        echo "$output" >&2
        return 1
    fi
    echo "$latencies"
}

median_ratio() {
    median_summary 'median %s: %.3f (range %.3f - %.3f, %d rounds)\n' "$1"
}

median_block_ratio() {
    awk 'NR % 2 { first = $1; next } { printf "%.6f\n", sqrt(first * $1) }' |
        median_summary 'median %s: %.3f (range %.3f - %.3f, %d blocks of two rounds)\n' "$1"
}
