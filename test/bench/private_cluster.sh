# Builds this tree, installs it into a private copy of PostgreSQL under $work/root (as
# test/run.sh does: nothing system-wide) and starts a throwaway cluster there with the extension
# preloaded; stops it and removes $work on exit. Sourced by the benchmarks:
#   private_cluster_start [postgresql.conf line ...]     needs $source_dir and $work
#   sql DB STATEMENT        runs STATEMENT in database DB; its result unaligned, no headers
#   now_s                   seconds since the epoch, with fractions
#   ratio A B               A / B to three decimals
#   median                  the median of numbers, one a line
source "$source_dir/scripts/cluster.sh"

private_cluster_start() {
    make -s -C "$source_dir" >/dev/null
    private_install "$work/root" "$source_dir"
    chmod 711 "$work"
    chown -R "$cluster_user" "$work/root" 2>/dev/null || true
    export PATH="$private_bindir:$PATH"
    trap 'cluster_stop; rm -rf "$work"' EXIT
    cluster_start "$private_bindir" "$work/cluster" "shared_preload_libraries = 'inbox'" "$@"
}

sql() {
    local db=$1
    shift
    PGOPTIONS='-c client_min_messages=warning' cluster_psql -d "$db" -At -c "$*"
}

now_s() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
median() {
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
