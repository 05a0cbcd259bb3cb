# Sourced by the benchmarks: builds this tree into a private copy of PostgreSQL and starts a
# throwaway cluster from it (as "postgres" when run as root), removed on exit.
#   start_throwaway_cluster "extra postgresql.conf lines"
#   sql DB "statement"         (psql -qAtX)
#   bench_pgbench DB args...   (pgbench)
set -euo pipefail

source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ "$(id -u)" -eq 0 ]; then bench_user=postgres; else bench_user=$(id -un); fi
bench_work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
bench_root="$bench_work/root"

as_bench_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$bench_user" -- env PATH="$PATH" "$@"; else "$@"; fi
}

stop_throwaway_cluster() {
    [ -f "$bench_work/data/postmaster.pid" ] &&
        as_bench_user pg_ctl -D "$bench_work/data" -m fast -w stop >/dev/null
    rm -rf "$bench_work"
}

start_throwaway_cluster() {
    for dir in "$(pg_config --pkglibdir)" "$(pg_config --sharedir)" "$(pg_config --bindir)"; do
        mkdir -p "$bench_root$(dirname "$dir")"
        cp -a "$dir" "$bench_root$dir"
    done
    make -s -C "$source_dir" all >/dev/null
    make -s -C "$source_dir" install DESTDIR="$bench_root" >/dev/null
    export PATH="$bench_root$(pg_config --bindir):$PATH"
    chown -R "$bench_user" "$bench_work" 2>/dev/null || true
    trap stop_throwaway_cluster EXIT
    as_bench_user initdb -D "$bench_work/data" -A trust -U postgres --no-sync >/dev/null
    cat >>"$bench_work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$bench_work'
shared_preload_libraries = 'inbox'
shared_buffers = '1GB'
max_wal_size = '4GB'
checkpoint_timeout = '30min'
$1
CONF
    as_bench_user pg_ctl -D "$bench_work/data" -l "$bench_work/server.log" -w start >/dev/null
}

sql() {
    local db=$1
    shift
    PGOPTIONS='-c client_min_messages=warning' as_bench_user \
        psql -h "$bench_work" -U postgres -d "$db" -qAtX -v ON_ERROR_STOP=1 -c "$*"
}

bench_pgbench() {
    local db=$1
    shift
    as_bench_user pgbench -h "$bench_work" -U postgres -n "$@" "$db"
}

# Seconds since the epoch, with fractions.
now_s() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
