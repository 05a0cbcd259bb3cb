# Interleaved pgbench comparisons on a cluster started with scripts/cluster.sh. Sourced by the
# benchmarks; expects $work, $seconds, $rounds and $clients.
#   pgbench_script NAME < script        writes $work/NAME.sql
#   pgbench_tps NAME                    one run, prints transactions per second
#   pgbench_compare OURS THEIRS         $rounds rounds, order alternated; prints the median ratio
#   median_ratio LABEL < ratios         prints the median of one ratio a line

pgbench_script() {
    cat >"$work/$1.sql"
    chmod 644 "$work/$1.sql"
}

pgbench_tps() {
    as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -M prepared \
        -c "$clients" -j "$clients" -T "$seconds" -f "$work/$1.sql" postgres |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

pgbench_compare() {
    local ours=$1 theirs=$2 round a b
    local results=()
    for round in $(seq "$rounds"); do
        if ((round % 2)); then
            a=$(pgbench_tps "$ours"); b=$(pgbench_tps "$theirs")
        else
            b=$(pgbench_tps "$theirs"); a=$(pgbench_tps "$ours")
        fi
        results+=("$a $b")
        awk -v r="$round" -v o="$ours" -v t="$theirs" -v a="$a" -v b="$b" \
            'BEGIN {printf "  round %d: %-8s %8.0f tps  %-8s %8.0f tps  ratio %.3f\n", r, o, a, t, b, a / b}'
    done
    printf '%s\n' "${results[@]}" | awk '{printf "%.6f\n", $1 / $2}' | median_ratio "$ours / $theirs"
}

median_ratio() {
    sort -n | awk -v label="$1" '{r[NR] = $1} END {printf "median %s: %.3f\n", label, r[int((NR + 1) / 2)]}'
}
