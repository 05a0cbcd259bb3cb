# Builds this tree, installs it into a private copy of PostgreSQL under $work/root (as
# test/run.sh does: nothing system-wide) and starts a throwaway cluster there with the extension
# preloaded; stops it and removes $work on exit. Sourced by the benchmarks:
#   private_cluster_start [postgresql.conf line ...]     needs $source_dir and $work
#   private_build [TREE [ROOT]]  builds TREE ($source_dir) and installs it into a private copy of
#                           PostgreSQL under ROOT ($work/root); ROOT and $work the cluster user's;
#                           sets private_bindir. No cluster and no trap: for benchmarks that run
#                           their own servers
#   private_side SIDE TREE  private_build of TREE into $work/SIDE/root, its binaries linked as
#                           $work/SIDE/bindir, $work/SIDE the cluster user's (one build of two
#                           compared)
#   private_side_cluster SIDE TREE [postgresql.conf line ...]
#                           private_side, and a cluster of that build started in $work/SIDE/cluster
#                           with the extension preloaded
#   use_side SIDE           points cluster_psql and cluster_stop at SIDE's cluster
#   stop_sides              stops the cluster of every side that has one
#   sql DB STATEMENT        runs STATEMENT in database DB; its result unaligned, no headers
#   now_s                   seconds since the epoch, with fractions
#   ratio A B               A / B to three decimals
#   median                  the median of numbers, one a line
#   median_summary FORMAT LABEL
#                           of numbers, one a line: awk's printf FORMAT of LABEL, their median
#                           (the lower middle one of an even count), lowest, highest and count
source "$source_dir/scripts/cluster.sh"

private_build() {
    local tree=${1:-$source_dir} root=${2:-$work/root}
    make -s -C "$tree" >/dev/null
    private_install "$root" "$tree"
    chmod 711 "$work"
    chown "$cluster_user" "$work" 2>/dev/null || true
    chown -R "$cluster_user" "$root" 2>/dev/null || true
}

private_side() {
    local side=$1 tree=$2
    mkdir -p "$work/$side"
    private_build "$tree" "$work/$side/root"
    ln -s "$private_bindir" "$work/$side/bindir"
    chown "$cluster_user" "$work/$side" 2>/dev/null || true
}

private_side_cluster() {
    local side=$1 tree=$2
    shift 2
    private_side "$side" "$tree"
    cluster_start "$private_bindir" "$work/$side/cluster" "shared_preload_libraries = 'inbox'" "$@"
}

use_side() {
    cluster_dir=$work/$1/cluster
    cluster_bindir=$work/$1/bindir
}

stop_sides() {
    local side
    for side in "$work"/*/; do
        side=$(basename "$side")
        [ -d "$work/$side/cluster" ] || continue
        use_side "$side"
        cluster_stop
    done
}

private_cluster_start() {
    private_build
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
median_summary() {
    sort -n | awk -v format="$1" -v label="$2" \
        '{ r[NR] = $1 } END { printf format, label, r[int((NR + 1) / 2)], r[1], r[NR], NR }'
}
