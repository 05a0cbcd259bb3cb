#!/usr/bin/env bash
# Runs the test suites against the extension as built in this tree:
#   test/run.sh [SUITE ...]     (default: all of them)
# SUITE: style lint unit regress isolation pgtap tap citus broker examples docs
#
# The suites never touch the system's PostgreSQL installation: every server starts from a
# private copy of it with this tree's extension installed (private_install in
# scripts/cluster.sh). Several trees can be tested at once, and no root privileges are needed
# beyond what is already installed.
#
# PostgreSQL refuses to run as root, so when started as root every server (and every client that
# starts servers, such as the TAP tests) runs as the unprivileged user "postgres", in a private
# work directory. Servers listen only on a Unix socket inside it: suites never collide on ports.
set -uo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
system_pg_config=$(command -v pg_config)
suites=("$@")
((${#suites[@]})) || suites=(style lint unit regress isolation pgtap tap citus broker examples docs)

source "$source_dir/scripts/cluster.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-test.XXXXXX")
cp -r "$source_dir/sql" "$source_dir/expected" "$source_dir/test" "$work/"

# The private installation: PostgreSQL as packaged, plus this tree's extension.
private_install "$work/root" "$source_dir" || { echo "make install failed"; exit 1; }
pg_bindir=$private_bindir
pgxs_dir=$private_pgxs_dir
chown -R "$cluster_user" "$work" 2>/dev/null || true
export PATH="$pg_bindir:$PATH"

# The cluster shared by the SQL-level suites (regress, isolation, pgtap).
socket_dir="$work/cluster"
trap cluster_stop EXIT

run_style() {
    make -s -C "$source_dir" format-check && "$source_dir/scripts/check-meta.py"
}

run_lint() {
    make -s -C "$source_dir" lint PG_CONFIG="$system_pg_config"
}

run_unit() {
    local build="$source_dir/build/unit"
    cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPG_CONFIG="$system_pg_config" >/dev/null &&
        cmake --build "$build" -j2 >/dev/null &&
        (cd "$build" && ctest --output-on-failure)
}

# A pg_regress-style suite on the shared cluster, in database inbox_SUITE, its output in
# $work/SUITE (the differences shown when it fails):
#   run_regression SUITE PROGRAM INPUTDIR TEST...       PROGRAM relative to the PGXS directory
run_regression() {
    local suite=$1 program=$2 inputdir=$3
    shift 3
    as_cluster_user "$pgxs_dir/$program" --host="$socket_dir" --user=postgres \
        --inputdir="$inputdir" --outputdir="$work/$suite" --dbname="inbox_$suite" "$@"
    local rc=$?
    ((rc == 0)) || cat "$work/$suite/regression.diffs" 2>/dev/null
    return $rc
}

run_regress() {
    run_regression regress test/regress/pg_regress "$work" \
        $(sed -n 's/^REGRESS *= *//p' "$source_dir/Makefile")
}

run_isolation() {
    run_regression isolation test/isolation/pg_isolation_regress "$work/test/isolation" \
        $(cd "$work/test/isolation/specs" && ls *.spec | sed 's/\.spec$//')
}

run_pgtap() {
    as_cluster_user psql -h "$socket_dir" -U postgres -d postgres -qc 'CREATE DATABASE inbox_pgtap' &&
        as_cluster_user psql -h "$socket_dir" -U postgres -d inbox_pgtap -qc \
            'CREATE EXTENSION pgtap; CREATE EXTENSION inbox' &&
        as_cluster_user pg_prove -h "$socket_dir" -U postgres -d inbox_pgtap "$work"/test/pgtap/*.sql
}

run_tap() {
    mkdir -p "$work/tap" && chown "$cluster_user" "$work/tap" 2>/dev/null
    (cd "$work" && as_cluster_user env PERL5LIB="$pgxs_dir/test/perl" \
        PG_REGRESS="$pgxs_dir/test/regress/pg_regress" TESTDIR="$work/tap" \
        INBOX_SOURCE_DIR="$work" prove -I "$work/test/t" "$work"/test/t/*.pl)
}

# Payments through a private RabbitMQ node, with copies, requeues and a consumer killed
# mid-transaction (test/broker).
run_broker() {
    as_cluster_user psql -h "$socket_dir" -U postgres -d postgres -qc 'CREATE DATABASE inbox_broker' &&
        PGHOST=$socket_dir PGUSER=postgres PGDATABASE=inbox_broker \
            "$source_dir/test/broker/run.sh" "$work/broker"
}

# The consumers of examples/, each against a fresh database (test/examples).
run_examples() {
    PGHOST=$socket_dir PGUSER=postgres "$source_dir/test/examples/run.sh" "$work/examples"
}

# Every ```sql block of README.md and docs/*.md runs as pasted (test/docs/check.py).
run_docs() {
    local documents=("$source_dir/README.md")
    [ -d "$source_dir/docs" ] && documents+=("$source_dir"/docs/*.md)
    (cd "$source_dir" && PGHOST=$socket_dir PGUSER=postgres /usr/bin/python3 test/docs/check.py \
        "${documents[@]#"$source_dir/"}")
}

# The Citus suite: a coordinator and two workers per test file (test/citus). It needs Citus
# built and installed into the system's PostgreSQL (so that the private copy has it too);
# without it the suite is skipped, and counts as passed.
run_citus() {
    local citus_library
    citus_library="$("$pg_bindir/pg_config" --pkglibdir)/citus.so"
    if [ ! -e "$citus_library" ]; then
        echo "Citus suite skipped: Citus is not installed (no citus.so in the PostgreSQL installation)"
        return 0
    fi
    mkdir -p "$work/citus-tap" && chown "$cluster_user" "$work/citus-tap" 2>/dev/null
    (cd "$work" && as_cluster_user env PERL5LIB="$pgxs_dir/test/perl" \
        PG_REGRESS="$pgxs_dir/test/regress/pg_regress" TESTDIR="$work/citus-tap" \
        INBOX_SOURCE_DIR="$work" prove -I "$work/test/t" -I "$work/test/citus" "$work"/test/citus/*.pl)
}

# A backend that died of a signal is a failure even when every assertion passed. Tests that
# kill a process on purpose write its pid to $TESTDIR/deliberate-kills.
check_server_logs() {
    local allowed pattern found
    allowed=$(cat "$work"/tap/deliberate-kills "$work"/citus-tap/deliberate-kills 2>/dev/null | sed 's/.*/(PID &)/' | paste -sd'|')
    pattern='terminated by signal'
    found=$(grep -rh --include='*.log' "$pattern" "$work" 2>/dev/null |
        { if [ -n "$allowed" ]; then grep -Ev "$allowed"; else cat; fi; })
    [ -z "$found" ] && return 0
    echo "server logs show a process terminated by a signal:"
    echo "$found"
    return 1
}

passed=0
failed=0
record() {
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1)); echo "== suite $1: ok"
    else
        failed=$((failed + 1)); echo "== suite $1: FAILED"
    fi
}

need_cluster=0
for suite in "${suites[@]}"; do
    case $suite in regress | isolation | pgtap | broker | examples | docs) need_cluster=1 ;; esac
done
if ((need_cluster)); then
    cluster_start "$pg_bindir" "$socket_dir" "shared_preload_libraries = 'inbox'" "fsync = off" \
        "log_line_prefix = '%m [%p] %q%a '" || { echo "could not start a test cluster"; exit 1; }
fi

for suite in "${suites[@]}"; do
    echo "== suite $suite"
    "run_$suite"
    record "$suite" $?
done

cluster_stop
check_server_logs
record "server-logs" $?

echo "$passed passed, $failed failed"
if ((failed)); then
    echo "work directory kept for inspection: $work"
    exit 1
fi
rm -rf "$work"
