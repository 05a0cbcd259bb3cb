# shellcheck shell=bash
# A single-user backend (postgres --single) of a private installation, and the instructions it
# runs counted by callgrind: counts that do not depend on the machine's load. Sourced by the
# instruction benchmarks after private_cluster.sh. The backend is $single_user_bindir/postgres
# on the data directory $single_user_data:
#   single_user_bench_start [postgresql.conf line ...]
#                                   what a benchmark of this tree alone starts with: $work
#                                   (removed on exit, kept with KEEP=1), the tree built into a
#                                   private installation, and single_user_init of it in
#                                   $work/data
#   single_user_use BINDIR DATA     sets them (to switch between installations)
#   single_user_init BINDIR DATA [postgresql.conf line ...]
#                                   single_user_use, and initdb of DATA by BINDIR's initdb, the
#                                   lines appended to its postgresql.conf
#   single_user [-j] NAME < statements
#                                   runs the statements: with -j each ends with ";" and an empty
#                                   line, else each is one line; the backend's output goes to
#                                   NAME.log, shown if the backend fails
#   callgrind_count [-j] NAME [FUNCTION ...] < statements
#                                   the same under callgrind, counting only inside the FUNCTIONs
#                                   (inclusive) if any are given, and prints the instructions
#                                   counted; the profile in NAME.out (for callgrind_annotate),
#                                   valgrind's temporary files in NAME's directory
#   instructions_per_transaction NAME CALLS WARM
#                                   of the statements that the benchmark's own function
#                                   `statement_lines NAME TIMES` prints (a PREPARE, then TIMES
#                                   lines of one transaction each): run CALLS and WARM times, the
#                                   difference divided by CALLS - WARM, which leaves out the
#                                   backend's start and the first executions; the profile of the
#                                   longer run in $work/NAME-CALLS.out
#   routine_instructions PROFILE CALLS ROUTINE[,ROUTINE...]
#                                   the inclusive instructions per transaction of each routine
#                                   named, as the profile of CALLS transactions counts them
#   compare_instructions NAME OTHER CALLS WARM ROUTINE[,ROUTINE...]
#                                   instructions_per_transaction of both, NAME / OTHER, and what
#                                   the routines named take in a transaction of each
# Over the protocol, as a client sees the server (a result row is a DataRow, not printed):
#   callgrind_cluster_start DIR [postgresql.conf line ...]
#                                   a cluster of $single_user_bindir in DIR (see cluster_start)
#                                   whose postmaster runs under callgrind: each backend it forks
#                                   writes its profile to DIR/profiles when it exits
#   backend_instructions APPLICATION COMMAND ...
#                                   runs COMMAND, a client of that cluster whose connections
#                                   are named APPLICATION (PGAPPNAME, or its own
#                                   application_name; no spaces), and prints the instructions
#                                   of the busiest backend of that name, found by its
#                                   disconnection's line in DIR/server.log: never a backend of
#                                   another command, one still writing its profile say

single_user_bench_start() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
    trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
    private_build
    single_user_init "$private_bindir" "$work/data" "$@"
}

single_user_use() {
    single_user_bindir=$1
    single_user_data=$2
}

single_user_init() {
    single_user_use "$1" "$2"
    shift 2
    as_cluster_user "$single_user_bindir/initdb" -D "$single_user_data" -A trust -U postgres \
        --no-sync >/dev/null
    if (($#)); then printf '%s\n' "$@" >>"$single_user_data/postgresql.conf"; fi
}

single_user() {
    local options=()
    if [ "$1" = -j ]; then options=(-j); shift; fi
    local name=$1
    as_cluster_user "$single_user_bindir/postgres" --single -D "$single_user_data" "${options[@]}" \
        postgres >"$name.log" 2>&1 || { cat "$name.log" >&2; return 1; }
}

callgrind_count() {
    local options=() toggles=() function
    if [ "$1" = -j ]; then options=(-j); shift; fi
    local name=$1
    shift
    for function in "$@"; do toggles+=(--toggle-collect="$function"); done
    as_cluster_user env TMPDIR="$(dirname "$name")" valgrind --tool=callgrind \
        --callgrind-out-file="$name.out" "${toggles[@]}" \
        "$single_user_bindir/postgres" --single -D "$single_user_data" "${options[@]}" postgres \
        >"$name.log" 2>&1 || { cat "$name.log" >&2; return 1; }
    sed -n 's/^summary: \([0-9]*\).*/\1/p' "$name.out"
}

instructions_per_transaction() {
    local name=$1 calls=$2 warm=$3 times
    local -a counted
    for times in "$calls" "$warm"; do
        statement_lines "$name" "$times" >"$work/$name-$times.sql"
        chmod 644 "$work/$name-$times.sql"
        counted+=("$(callgrind_count "$work/$name-$times" <"$work/$name-$times.sql")")
    done
    echo $(((counted[0] - counted[1]) / (calls - warm)))
}

routine_instructions() {
    local profile=$1 calls=$2 routines=$3
    callgrind_annotate --inclusive=yes --threshold=100 "$profile" 2>/dev/null |
        awk -v n="$calls" -v routines="${routines//,/|}" '
            $0 ~ "[:](" routines ") \\[" {
                gsub(",", "", $1); name = $(NF - 1); sub(/^.*:/, "", name)
                printf "  %-28s %7d\n", name, $1 / n
            }'
}

compare_instructions() {
    local name=$1 other=$2 calls=$3 warm=$4 routines=$5 side
    local -A per_transaction
    for side in "$name" "$other"; do
        per_transaction[$side]=$(instructions_per_transaction "$side" "$calls" "$warm")
        printf '%-15s %7d instructions per transaction\n' "$side" "${per_transaction[$side]}"
    done
    printf '%s / %s: %s times the instructions\n' "$name" "$other" \
        "$(ratio "${per_transaction[$name]}" "${per_transaction[$other]}")"
    for side in "$name" "$other"; do
        echo "inside a transaction of $side (inclusive, per transaction):"
        routine_instructions "$work/$side-$calls.out" "$calls" "$routines"
    done
}

callgrind_cluster_start() {
    local dir=$1
    shift
    callgrind_cluster_dir=$dir
    mkdir -p "$dir/profiles"
    chown -R "$cluster_user" "$dir" 2>/dev/null || true
    as_cluster_user "$single_user_bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "autovacuum = off"  # no vacuum's work in a side's counts
        # (backend_instructions finds its backends by these lines: process id, application)
        echo "log_connections = on"
        echo "log_disconnections = on"
        echo "log_line_prefix = '%p %a '"
        printf '%s\n' "$@"
    } >>"$dir/data/postgresql.conf"
    cat >"$dir/postgres" <<SCRIPT
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file='$dir/profiles/%p.out' \\
    '$single_user_bindir/postgres' "\$@"
SCRIPT
    chmod 755 "$dir/postgres"
    as_cluster_user "$single_user_bindir/pg_ctl" -D "$dir/data" -p "$dir/postgres" -t 600 \
        -l "$dir/server.log" -w start >/dev/null
}

backend_instructions() {
    local application=$1 log=$callgrind_cluster_dir/server.log offset
    shift
    offset=$(stat -c %s "$log")
    PGAPPNAME=$application "$@" >"$callgrind_cluster_dir/client.log" 2>&1 ||
        { cat "$callgrind_cluster_dir/client.log" >&2; return 1; }
    # Each backend logs its disconnection and then writes its profile as it exits, after its
    # client is gone. A client may have had more than one connection (pgbench's first one only
    # looks at the server): wait until every connection of that name logged its disconnection
    # (not until the postmaster has as many children as before: a worker of its own that comes
    # or goes meanwhile would end the wait early), and take the largest count of those backends.
    until tail -c +$((offset + 1)) "$log" | awk -v name="$application" '
            / connection authorized: / && $0 ~ ("application_name=" name "$") { opened++ }
            $2 == name && / disconnection: / { closed++ }
            END { exit !(opened > 0 && closed >= opened) }'; do
        sleep 0.1
    done
    tail -c +$((offset + 1)) "$log" |
        awk -v name="$application" '$2 == name && / disconnection: / { print $1 }' |
        while read -r pid; do
            local profile=$callgrind_cluster_dir/profiles/$pid.out
            until [ -f "$profile" ] && grep -q '^totals:' "$profile"; do sleep 0.1; done
            sed -n 's/^summary: \([0-9]*\).*/\1/p' "$profile"
        done | sort -n | tail -1 | grep . ||
        { echo "no backend named $application disconnected" >&2; return 1; }
}
