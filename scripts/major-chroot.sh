#!/usr/bin/env bash
# Runs the test suites against another PostgreSQL major, in a chroot of the Debian suite that
# packages it (run as root: scripts/as-root.sh; `make test PG_MAJOR=17` calls it so):
#   scripts/major-chroot.sh MAJOR [SUITE ...]
#   scripts/major-chroot.sh MAJOR -- COMMAND [ARGUMENT ...]
#   scripts/major-chroot.sh --prepare MAJOR [SUITE ...]
# --prepare: only build the chroot and install what the suites need, running nothing (CI builds
# the chroots so while the suites run on the machine).
# MAJOR: 15 (bookworm), 17 (trixie), 18 (sid), 19 (sid, with postgresql-19 from experimental).
# SUITE: those of test/run.sh but style and lint, which check the sources whatever the major and
# run on the machine itself; by default every other one. After --, COMMAND (a path in the tree,
# such as test/bench/claim_apply_vs_sql.sh) runs instead of test/run.sh, in the built tree.
# INBOX_UPGRADE_FROM=15: PostgreSQL 15 (from bookworm) is installed beside MAJOR, in a chroot of
# its own (MAJOR-SUITE+15), and inbox is built for both: the TAP test of pg_upgrade from 15 to
# MAJOR runs instead of skipping (`make test-upgrade PG_MAJOR=17`).
#
# The chroot is built once with mmdebstrap (scripts/debian-chroot.sh) into MAJOR-SUITE of the
# chroots' cache, outside the tree (${XDG_CACHE_HOME:-$HOME/.cache}/inbox/chroots of root, or
# $INBOX_CHROOTS), and reused by every clone; it is built anew when this script's list of what
# goes into it changes. Remove the directory to build it afresh (newer packages of its suite).
#
# Each run copies the working tree (its files that git does not ignore) into the chroot, builds
# it there against that major (a failure to build is reported as such), and runs test/run.sh
# there, as root, so that the servers run as the chroot's "postgres" user (the postgresql
# package creates it), in namespaces of the run's own (chroot_run): when the run ends, however it
# ends, its mounts go and no process it started survives it.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
source "$source_dir/scripts/debian-chroot.sh"

usage() {
    echo "usage: $0 MAJOR [SUITE ...] | MAJOR -- COMMAND [ARGUMENT ...]   (MAJOR: 15, 17, 18 or 19)" >&2
    exit 2
}
case ${1:-} in
-h | --help)
    echo "usage: $0 [--prepare] MAJOR [SUITE ...] | MAJOR -- COMMAND [ARGUMENT ...]"
    echo "MAJOR: 15, 17, 18 or 19; the chroots are kept in $chroots (INBOX_CHROOTS)"
    exit 0
    ;;
esac
prepare_only=false
if [ "${1:-}" = --prepare ]; then
    prepare_only=true
    shift
fi
(($# >= 1)) || usage
major=$1
shift
suites=()
command=(test/run.sh)
if [ "${1:-}" = -- ]; then
    shift
    (($# >= 1)) || usage
    command=("$@")
else
    suites=("$@")
    ((${#suites[@]})) || suites=(unit regress isolation pgtap tap citus broker examples docs)
fi
for suite in "${suites[@]}"; do
    case $suite in
    style | lint)
        echo "suite $suite checks the sources whatever the major: run it with test/run.sh" >&2
        exit 2
        ;;
    esac
done

# The Debian suite of each major (scripts/debian-chroot.sh). Experimental has no pg_cron and no
# pgTAP for 19 yet: there the pgTAP suite and the TAP test of the purge through pg_cron say so
# and are skipped.
debian_suite "$major"
extensions=(cron pgtap)
[ "$major" = 19 ] && extensions=()

# What the build (the extension and inbox-relay) and the suites unit, regress, isolation, pgtap,
# tap and docs need, as install-deps.sh installs it on the machine (but for clang-format and
# clang-tidy, of style and lint, and Citus, which Debian does not package: the Citus suite reports
# itself skipped).
packages=(
    "postgresql-$major" "postgresql-server-dev-$major" "${extensions[@]/#/postgresql-$major-}" pgtap
    build-essential cmake libgtest-dev libipc-run-perl prometheus python3
    libpq-dev librabbitmq-dev libcurl4-openssl-dev
)

# What broker and examples need beyond that (Erlang, Node.js and its modules: two thirds of a
# chroot that held everything; the examples' RabbitMQ consumer too), installed the first time a
# run asks for those suites.
suite_packages() {
    case $1 in
    broker) echo rabbitmq-server python3-psycopg python3-pika ;;
    examples) echo libpqxx-dev nodejs npm python3-psycopg ca-certificates rabbitmq-server python3-pika ;;
    esac
}

# The older major of the pg_upgrade test, from its own suite: apt takes from the newer suite
# what both have, and from the older one what only it has (that major and its libraries).
upgrade_from=${INBOX_UPGRADE_FROM:-}
variant=
case $upgrade_from in
'') ;;
"$major")
    echo "INBOX_UPGRADE_FROM: the major to upgrade from is older than $major" >&2
    exit 2
    ;;
15)
    sources+=("deb $mirror bookworm main")
    packages+=("postgresql-$upgrade_from" "postgresql-server-dev-$upgrade_from")
    variant=+$upgrade_from
    ;;
*)
    echo "INBOX_UPGRADE_FROM: only 15 (bookworm) is an older major to upgrade from" >&2
    exit 2
    ;;
esac

chroot_dir=$chroots/$major-$suite$variant
chroot_ready "$chroot_dir" "${packages[@]}"

# Installs what the suites asked for need and the chroot lacks. The services their packages
# would start (RabbitMQ) stay down: the suites start their own.
install_suite_packages() {
    local wanted=() missing=() package suite_name
    for suite_name in "${suites[@]}"; do
        read -ra wanted <<<"$(suite_packages "$suite_name")"
        for package in "${wanted[@]}"; do
            chroot "$chroot_dir" dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null |
                grep -qx installed || missing+=("$package")
        done
    done
    ((${#missing[@]})) || return 0
    echo "installing into the chroot: ${missing[*]}"
    local started=$SECONDS
    cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
    printf '#!/bin/sh\nexit 101\n' >"$chroot_dir/usr/sbin/policy-rc.d"
    chmod 755 "$chroot_dir/usr/sbin/policy-rc.d"
    chroot_run "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get update -qq && apt-get install -y -qq "$@" >/dev/null' install "${missing[@]}" ||
        { echo "could not install ${missing[*]} into the chroot" >&2; return 1; }
    rm -f "$chroot_dir/usr/sbin/policy-rc.d"
    echo "installed in $((SECONDS - started)) s"
}
install_suite_packages
if $prepare_only; then exit 0; fi

# This run's copy of the tree, inside the chroot (tree_files).
run_dir=$(mktemp -d "$chroot_dir/tmp/inbox-tree.XXXXXX")
chmod 755 "$run_dir"
tree_files | tar -C "$source_dir" --null -T - -cf - | tar -xf - -C "$run_dir"
inner_dir=${run_dir#"$chroot_dir"}
# npm (the Node example) reaches its registry as the machine does: its name server, the
# certificate authorities it trusts (a proxy's, say), its proxy settings.
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
mkdir -p "$chroot_dir/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$chroot_dir/etc/ssl/certs/ca-certificates.crt"
# What the run takes from the caller's environment: that, and the subsets of test/run.sh
# (REGRESS=purge, ISOLATION=batches, PROVE_TESTS=test/t/011_purge_cron.pl).
passed_env=()
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY NODE_EXTRA_CA_CERTS \
    REGRESS ISOLATION PROVE_TESTS PROVE_FLAGS; do
    [ -n "${!name:-}" ] && passed_env+=("$name=${!name}")
done
if [ -n "$upgrade_from" ]; then
    passed_env+=("UPGRADE_FROM_PG_CONFIG=/usr/lib/postgresql/$upgrade_from/bin/pg_config")
fi

inner_path=/usr/lib/postgresql/$major/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Runs that share the chroot share its /tmp, and their processes the same PIDs (each run has a PID
# namespace of its own), which make names its jobserver's FIFO after: each run gets a temporary
# directory of its own, in its copy of the tree.
inner_script='
cd "$1"; shift
mkdir -m 1777 .tmp && export TMPDIR=$PWD/.tmp
echo "PostgreSQL $(pg_config --version | cut -d" " -f2-) in the chroot; building inbox"
if ! make -s -j2; then
    echo "inbox does not build against PostgreSQL '"$major"' ($(pg_config --version))" >&2
    exit 1
fi
"$@"
'
status=0
chroot_run "$chroot_dir" env -i PATH="$inner_path" HOME=/root LANG=C.UTF-8 \
    TERM="${TERM:-dumb}" "${passed_env[@]}" bash -c "$inner_script" inner "$inner_dir" "${command[@]}" "${suites[@]}" || status=$?

if ((status == 0)); then
    rm -rf "$run_dir"
    echo "PostgreSQL $major: ${command[*]} ${suites[*]}: passed"
else
    echo "PostgreSQL $major: ${command[*]} ${suites[*]}: FAILED; the tree and work directories are kept in $chroot_dir/tmp"
fi
exit "$status"
