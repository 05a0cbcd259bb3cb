# A throwaway PostgreSQL cluster listening only on a Unix socket in its own directory, run as
# "postgres" when we are root (PostgreSQL refuses root). Sourced by the demo, the test harness
# and the benchmarks:
#   cluster_start BINDIR DIR [postgresql.conf line ...]
#   cluster_psql [psql args ...]          (connected as postgres to database postgres)
#   cluster_stop
#   private_install ROOT SOURCE_DIR [MAKE_ARG ...]
#                                         PostgreSQL as packaged plus SOURCE_DIR's extension
#                                         (built with the make arguments), under ROOT; sets
#                                         private_bindir and private_pgxs_dir. The major is the
#                                         one of pg_config on PATH, or of PG_CONFIG=... among
#                                         the make arguments
# DIR must not exist yet or be empty, and its parent must be reachable by the cluster user.

if [ "$(id -u)" -eq 0 ]; then cluster_user=postgres; else cluster_user=$(id -un); fi

as_cluster_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$cluster_user" -- env PATH="$PATH" "$@"
    else
        "$@"
    fi
}

cluster_start() {
    cluster_bindir=$1
    cluster_dir=$2
    shift 2
    mkdir -p "$cluster_dir"
    chown "$cluster_user" "$cluster_dir" 2>/dev/null || true
    as_cluster_user "$cluster_bindir/initdb" -D "$cluster_dir/data" -A trust -U postgres \
        --no-sync >"$cluster_dir/initdb.log" 2>&1 || { cat "$cluster_dir/initdb.log"; return 1; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$cluster_dir'"
        printf '%s\n' "$@"
    } >>"$cluster_dir/data/postgresql.conf"
    as_cluster_user "$cluster_bindir/pg_ctl" -D "$cluster_dir/data" -l "$cluster_dir/server.log" \
        -w start >/dev/null
}

cluster_psql() {
    as_cluster_user "$cluster_bindir/psql" -h "$cluster_dir" -U postgres -d postgres -X -q \
        -v ON_ERROR_STOP=1 "$@"
}

cluster_stop() {
    [ -n "${cluster_dir:-}" ] && [ -f "$cluster_dir/data/postmaster.pid" ] &&
        as_cluster_user "$cluster_bindir/pg_ctl" -D "$cluster_dir/data" -m fast -w stop >/dev/null
    return 0
}

# PostgreSQL's binaries are relocatable: a copy of the packaged installation finds its libraries
# and extensions next to itself, so `make install DESTDIR=` into the copy tests this tree without
# touching (or needing root for) the system's installation.
private_install() {
    local root=$1 source_dir=$2 pg_config=pg_config arg dir
    shift 2
    for arg; do
        case $arg in PG_CONFIG=*) pg_config=${arg#PG_CONFIG=} ;; esac
    done
    for dir in "$("$pg_config" --pkglibdir)" "$("$pg_config" --sharedir)" "$("$pg_config" --bindir)"; do
        mkdir -p "$root$(dirname "$dir")"
        [ -e "$root$dir" ] || cp -a "$dir" "$root$dir"
    done
    make -s -j2 -C "$source_dir" install DESTDIR="$root" "$@" >/dev/null || return 1
    private_bindir="$root$("$pg_config" --bindir)"
    private_pgxs_dir="$root$(dirname "$("$pg_config" --pgxs)")/.."
}
