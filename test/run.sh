#!/usr/bin/env bash
# Runs the test suites against the extension as built in this tree:
#   test/run.sh [SUITE ...]     (default: all of them)
# SUITE: style lint unit regress isolation pgtap tap citus broker relay chain streams examples docs
# A suite whose requisites are not installed (Citus; pgTAP for a new major) says so and is
# reported as skipped.
# A subset of regress, isolation or tap: REGRESS=purge test/run.sh regress (see pgxs_installcheck).
# The PostgreSQL tested is the one whose pg_config comes first in PATH: another installation (one
# built from source) with PATH=<prefix>/bin:$PATH test/run.sh, or make test PG_CONFIG=....
#
# The suites never touch the system's PostgreSQL installation: every server starts from a
# private copy of it with this tree's extension installed (private_install in
# scripts/cluster.sh). Several trees can be tested at once, and no root privileges are needed
# beyond what is already installed.
#
# regress, isolation and tap are PGXS's `make installcheck`, run in a copy of the tree against
# the private copy (its pg_config reports its own paths: PostgreSQL's binaries are relocatable).
# Their temporary instances and TAP nodes start and stop with them. What PGXS cannot do is
# here: the private installation, the unprivileged user, lint, unit, pgTAP (pg_prove needs a
# running cluster: the one this script starts, shared with broker, examples and docs), the
# other suites, and the scan of every server log for a process terminated by a signal.
#
# PostgreSQL refuses to run as root, so when started as root every server (and every client that
# starts servers, such as make installcheck) runs as the unprivileged user "postgres", in a
# private work directory. Servers listen only on Unix sockets inside it (the temporary instances
# and TAP nodes in $work/tmp): suites never collide on ports.
set -uo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
tested_pg_config=$(command -v pg_config)
suites=("$@")
((${#suites[@]})) ||
    suites=(style lint unit regress isolation pgtap tap citus broker relay chain streams examples
        docs)

source "$source_dir/scripts/cluster.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-test.XXXXXX")
# The copy of the tree that make installcheck runs in: it writes its results beside the tests.
cp -r "$source_dir"/{Makefile,sources.mk,inbox.control,src,sql,expected,test,docs} "$work/"
# What this tree's make built is built again there: a copied file is newer than its sources
# (the objects, and the scripts made from others, such as inbox--1.2.sql).
make -s -C "$work" clean PG_CONFIG="$tested_pg_config" >/dev/null
# TMPDIR of make installcheck, where pg_regress and the TAP nodes put their sockets: writable
# by the cluster user, whatever the caller's TMPDIR is.
mkdir "$work/tmp"

# The private installation: PostgreSQL as packaged, plus this tree's extension built with
# assertions (PostgreSQL's Assert, on in our code only), which the tests then exercise.
private_install "$work/root" "$work" PG_CPPFLAGS=-DUSE_ASSERT_CHECKING ||
    { echo "make install failed"; exit 1; }
pg_bindir=$private_bindir
pg_major=$("$pg_bindir/pg_config" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
# What a suite returns when what it needs is not installed (it says what), as automake's tests do.
skipped=77
pgxs_dir=$private_pgxs_dir
chown -R "$cluster_user" "$work" 2>/dev/null || true
export PATH="$pg_bindir:$PATH"

# The cluster shared by pgtap, broker, examples and docs.
socket_dir="$work/cluster"
trap cluster_stop EXIT

run_style() {
    make -s -C "$source_dir" format-check && "$source_dir/scripts/check-meta.py" &&
        "$source_dir/scripts/check-layers.py"
}

run_lint() {
    make -s -C "$source_dir" lint PG_CONFIG="$tested_pg_config"
}

run_unit() {
    local build="$source_dir/build/unit"
    cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DPG_CONFIG="$tested_pg_config" >/dev/null &&
        cmake --build "$build" -j2 >/dev/null &&
        (cd "$build" && ctest --output-on-failure)
}

# make installcheck in the copy of the tree, against the private installation; the arguments
# empty the suites not wanted (REGRESS= ISOLATION= TAP_TESTS=). A subset of a suite comes from
# the environment: REGRESS="purge stats", ISOLATION=batches, PROVE_TESTS=test/t/011_purge_cron.pl.
pgxs_installcheck() {
    local subset=()
    local name
    for name in REGRESS ISOLATION PROVE_TESTS; do
        [ -n "${!name:-}" ] && subset+=("$name=${!name}")
    done
    as_cluster_user env TMPDIR="$work/tmp" make -s --no-print-directory -C "$work" installcheck \
        PG_CONFIG="$pg_bindir/pg_config" "${subset[@]}" "$@"
}

run_regress() {
    pgxs_installcheck ISOLATION= TAP_TESTS= || { cat "$work/regression.diffs" 2>/dev/null; false; }
}

run_isolation() {
    pgxs_installcheck REGRESS= TAP_TESTS= ||
        { cat "$work/output_iso/regression.diffs" 2>/dev/null; false; }
}

# pgTAP comes as a package per major, which Debian builds some time after the major (none yet
# for 19): without it the suite is skipped.
run_pgtap() {
    if [ ! -e "$("$pg_bindir/pg_config" --sharedir)/extension/pgtap.control" ]; then
        echo "pgtap suite skipped: pgTAP is not installed for PostgreSQL $pg_major" \
            "(Debian: postgresql-$pg_major-pgtap)"
        return "$skipped"
    fi
    as_cluster_user psql -h "$socket_dir" -U postgres -d postgres -qc 'CREATE DATABASE inbox_pgtap' &&
        as_cluster_user psql -h "$socket_dir" -U postgres -d inbox_pgtap -qc \
            'CREATE EXTENSION pgtap; CREATE EXTENSION inbox' &&
        as_cluster_user pg_prove -h "$socket_dir" -U postgres -d inbox_pgtap "$work"/test/pgtap/*.sql
}

# UPGRADE_FROM_PG_CONFIG: the pg_config of an older major, for which this tree is built too, in
# a copy of its own, and installed into a private copy of that major beside this one: the TAP
# test of pg_upgrade (test/t/025_pg_upgrade.pl) upgrades from it instead of skipping.
install_upgrade_from() {
    [ -n "${UPGRADE_FROM_PG_CONFIG:-}" ] || return 0
    local build="$work/upgrade-from"
    mkdir "$build" && cp -r "$source_dir"/{Makefile,sources.mk,inbox.control,src,sql} "$build/" &&
        make -s -C "$build" clean PG_CONFIG="$UPGRADE_FROM_PG_CONFIG" >/dev/null &&
        private_install "$work/root" "$build" PG_CONFIG="$UPGRADE_FROM_PG_CONFIG" \
            PG_CPPFLAGS=-DUSE_ASSERT_CHECKING ||
        { echo "inbox does not build or install for $("$UPGRADE_FROM_PG_CONFIG" --version)"; return 1; }
    export INBOX_UPGRADE_FROM_BINDIR=$private_bindir
}

# The TAP tests' nodes and their logs are in $work/tmp_check.
run_tap() {
    install_upgrade_from && pgxs_installcheck REGRESS= ISOLATION=
}

# Payments through a private RabbitMQ node, with copies, requeues and a consumer killed
# mid-transaction (test/broker).
run_broker() {
    as_cluster_user psql -h "$socket_dir" -U postgres -d postgres -qc 'CREATE DATABASE inbox_broker' &&
        PGHOST=$socket_dir PGUSER=postgres PGDATABASE=inbox_broker \
            "$source_dir/test/broker/run.sh" "$work/broker"
}

# inbox-relay, as installed with the extension, publishing to a private RabbitMQ node and to
# an HTTP endpoint through kill -9, restarts of PostgreSQL and RabbitMQ, and SIGTERM; with a
# cluster of its own, which it restarts (test/relay); then its backoff from a sink that fails
# every batch (sink_backoff_test.py), and AMQP over TLS (tls_test.py).
run_relay() {
    install_round_trip && "$source_dir/test/relay/run.sh" "$work/relay" "$pg_bindir" &&
        "$source_dir/test/relay/run.sh" "$work/relay-backoff" "$pg_bindir" sink_backoff_test.py &&
        "$source_dir/test/relay/run.sh" "$work/relay-tls" "$pg_bindir" tls_test.py
}

# `make install` puts inbox-relay beside PostgreSQL's programs, and `make uninstall` takes it
# away again with everything else the install wrote.
install_round_trip() {
    local root=$work/install-round-trip left
    make -s -C "$work" install DESTDIR="$root" PG_CONFIG="$tested_pg_config" >/dev/null &&
        [ -x "$root$("$tested_pg_config" --bindir)/inbox-relay" ] &&
        make -s -C "$work" uninstall DESTDIR="$root" PG_CONFIG="$tested_pg_config" >/dev/null ||
        { echo "make install or uninstall failed, or installed no inbox-relay"; return 1; }
    left=$(find "$root" -type f)
    [ -z "$left" ] || { echo "make uninstall left: $left"; return 1; }
}

# Payments sent with the outbox, applied by a consumer that sends an OrderPaid from the same
# transaction, applied again downstream: the chain through two relays and RabbitMQ, with kills
# and restarts at every hop; with a cluster of its own too (test/relay/chain_test.py).
run_chain() {
    "$source_dir/test/relay/run.sh" "$work/chain" "$pg_bindir" chain_test.py
}

# Payments in RabbitMQ stream queues, applied once each by consumers that claim their offsets
# with inbox.claim_position and resume from inbox.stream_position, through kill -9 of consumers,
# rebalance overlaps and restarts; with a cluster of its own too (test/relay/stream_test.py).
run_streams() {
    "$source_dir/test/relay/run.sh" "$work/streams" "$pg_bindir" stream_test.py
}

# The consumers of examples/, each against a fresh database (test/examples).
run_examples() {
    PGHOST=$socket_dir PGUSER=postgres "$source_dir/test/examples/run.sh" "$work/examples"
}

# Every ```sql block of README.md, CONTRIBUTING.md and docs/*.md runs as pasted, in order, in the
# psql session of the role its first line names, showing what its comments say; and every
# relative link reaches its file and heading (test/docs/check.py).
run_docs() {
    local documents=("$source_dir/README.md" "$source_dir/CONTRIBUTING.md")
    [ -d "$source_dir/docs" ] && documents+=("$source_dir"/docs/*.md)
    (cd "$source_dir" && PGHOST=$socket_dir PGUSER=postgres /usr/bin/python3 test/docs/check.py \
        "${documents[@]#"$source_dir/"}")
}

# The Citus suite: a coordinator and two workers per test file (test/citus). It needs Citus
# built and installed into the system's PostgreSQL (so that the private copy has it too);
# without it the suite is skipped.
run_citus() {
    local citus_library
    citus_library="$("$pg_bindir/pg_config" --pkglibdir)/citus.so"
    if [ ! -e "$citus_library" ]; then
        echo "Citus suite skipped: Citus is not installed (no citus.so in the PostgreSQL installation)"
        return "$skipped"
    fi
    mkdir -p "$work/citus-tap" && chown "$cluster_user" "$work/citus-tap" 2>/dev/null
    (cd "$work" && as_cluster_user env PERL5LIB="$pgxs_dir/test/perl" \
        PG_REGRESS="$pgxs_dir/test/regress/pg_regress" TESTDIR="$work/citus-tap" \
        prove -I "$work/test/t" -I "$work/test/citus" "$work"/test/citus/*.pl)
}

# A backend that died of a signal is a failure even when every assertion passed, whichever
# server's log shows it: the shared cluster's, the temporary instances' (log/, output_iso/log/),
# the TAP nodes' (tmp_check/log/, citus-tap/tmp_check/log/). Tests that kill a process on purpose
# record its pid in tmp_check/deliberate-kills (InboxTest::deliberately_kill).
check_server_logs() {
    local allowed pattern found
    allowed=$(cat "$work"/{,citus-tap/}tmp_check/deliberate-kills 2>/dev/null |
        sed 's/.*/(PID &)/' | paste -sd'|')
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
skipped_suites=0
# The time each suite took, to see what a run on another major (scripts/major-chroot.sh) costs.
# A suite skipped (it said why) is neither passed nor failed.
record() {
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1)); echo "== suite $1: ok${3:+ ($3 s)}"
    elif [ "$2" -eq "$skipped" ]; then
        skipped_suites=$((skipped_suites + 1)); echo "== suite $1: skipped"
    else
        failed=$((failed + 1)); echo "== suite $1: FAILED${3:+ ($3 s)}"
    fi
}

need_cluster=0
for suite in "${suites[@]}"; do
    case $suite in pgtap | broker | examples | docs) need_cluster=1 ;; esac
done
if ((need_cluster)); then
    # wal_level = logical: the publisher that docs/operations.md sets up, whose blocks docs runs.
    cluster_start "$pg_bindir" "$socket_dir" "shared_preload_libraries = 'inbox'" "fsync = off" \
        "wal_level = logical" \
        "log_line_prefix = '%m [%p] %q%a '" || { echo "could not start a test cluster"; exit 1; }
fi

for suite in "${suites[@]}"; do
    echo "== suite $suite"
    started=$SECONDS
    "run_$suite"
    record "$suite" $? $((SECONDS - started))
done

cluster_stop
check_server_logs
record "server-logs" $?

summary="$passed passed, $failed failed"
((skipped_suites == 0)) || summary+=", $skipped_suites skipped"
echo "$summary"
if ((failed)); then
    echo "work directory kept for inspection: $work"
    exit 1
fi
rm -rf "$work"
