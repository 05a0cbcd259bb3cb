#!/usr/bin/env bash
# Runs the test suites against another PostgreSQL major, in a chroot of the Debian suite that
# packages it (run as root: scripts/as-root.sh; `make test PG_MAJOR=17` calls it so):
#   scripts/major-chroot.sh MAJOR [SUITE ...]
# MAJOR: 15 (bookworm), 17 (trixie), 18 (sid), 19 (sid, with postgresql-19 from experimental).
# SUITE: those of test/run.sh but style and lint, which check the sources whatever the major and
# run on the machine itself; by default every other one.
# INBOX_UPGRADE_FROM=15: PostgreSQL 15 (from bookworm) is installed beside MAJOR, in a chroot of
# its own (MAJOR-SUITE+15), and inbox is built for both: the TAP test of pg_upgrade from 15 to
# MAJOR runs instead of skipping (`make test-upgrade PG_MAJOR=17`).
#
# The chroot is built once with mmdebstrap into chroots/MAJOR-SUITE (ignored by git, and left
# alone by make clean; or $INBOX_CHROOTS/MAJOR-SUITE) and reused; it is built anew when this script's list of what goes into it
# changes. Remove the directory to build it afresh (newer packages of its suite).
#
# Each run copies the working tree (its files that git does not ignore) into the chroot, builds
# it there against that major (a failure to build is reported as such), and runs test/run.sh
# there, as root, so that the servers run as the chroot's "postgres" user (the postgresql
# package creates it). /proc, /dev and a private /dev/shm are mounted in a mount namespace and
# a PID namespace of the run's own: when the run ends, however it ends (an interrupt, unshare
# killed: --kill-child), the mounts go with the namespace and no process it started survives it.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
mirror=http://deb.debian.org/debian

usage() {
    echo "usage: $0 MAJOR [SUITE ...]   (MAJOR: 15, 17, 18 or 19)" >&2
    exit 2
}
(($# >= 1)) || usage
major=$1
shift
suites=("$@")
((${#suites[@]})) || suites=(unit regress isolation pgtap tap citus broker examples docs)
for suite in "${suites[@]}"; do
    case $suite in
    style | lint)
        echo "suite $suite checks the sources whatever the major: run it with test/run.sh" >&2
        exit 2
        ;;
    esac
done

# The Debian suite of each major, and the release to take PostgreSQL from when it is not that
# suite. Experimental has no pg_cron and no pgTAP for 19 yet: there the pgTAP suite and the TAP
# tests of the purge through pg_cron fail.
extensions=(cron pgtap)
case $major in
15) suite=bookworm ;;
17) suite=trixie ;;
18) suite=sid ;;
19) suite=sid release=experimental extensions=() ;;
16)
    echo "no Debian suite packages PostgreSQL 16" >&2
    exit 2
    ;;
*) usage ;;
esac
sources=("deb $mirror $suite main")
# PostgreSQL from that release, with the C library it was built against (experimental's
# postgresql-19 needs a newer one than sid's); everything else from the suite.
pin=
if [ -n "${release:-}" ]; then
    sources+=("deb $mirror $release main")
    pin="Package: src:postgresql-$major src:glibc
Pin: release a=$release
Pin-Priority: 990"
fi

# What the build and the suites need, as install-deps.sh installs it on the machine (but for
# clang-format and clang-tidy, of style and lint, and Citus, which Debian does not package: the
# Citus suite reports itself skipped).
packages=(
    "postgresql-$major" "postgresql-server-dev-$major" "${extensions[@]/#/postgresql-$major-}" pgtap
    build-essential cmake libgtest-dev libipc-run-perl prometheus
    rabbitmq-server python3 python3-psycopg python3-pika libpqxx-dev nodejs npm ca-certificates
)

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

# INBOX_CHROOTS: another directory for the chroots, to keep them across clones of the tree.
chroot_dir=${INBOX_CHROOTS:-$source_dir/chroots}/$major-$suite$variant
# What the chroot is built from: when it changes, the chroot is built anew.
recipe=$(printf '%s\n' "$suite" "${sources[@]}" "$pin" "${packages[@]}")
recipe_file=etc/inbox-chroot-recipe

build_chroot() {
    command -v mmdebstrap >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap; }
    local partial=$chroot_dir.partial log=$chroot_dir.log started=$SECONDS
    # --one-file-system: should a killed mmdebstrap have left the machine's /dev mounted in the
    # partial chroot, rm stops there instead of emptying it.
    rm -rf --one-file-system "$partial"
    mkdir -p "$(dirname "$chroot_dir")"
    echo "building the chroot of $suite for PostgreSQL $major in $chroot_dir"
    local include pin_hooks=()
    include=$(IFS=,; echo "${packages[*]}")
    [ -n "$pin" ] && pin_hooks=(--setup-hook='mkdir -p "$1/etc/apt/preferences.d"'
        --setup-hook="printf '%s\n' '$pin' >\"\$1/etc/apt/preferences.d/inbox-postgresql\"")
    # Built beside its final place and moved there when complete: an interrupted build leaves
    # no chroot that looks ready.
    # The Release files of a mirror frozen at a date (a snapshot) expire, which is no reason
    # not to use them.
    if ! mmdebstrap --variant=apt --mode=root --include="$include" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        "${pin_hooks[@]}" "$suite" "$partial" "${sources[@]}" >"$log" 2>&1; then
        grep -v '^\(I\|Get\|Selecting\|Preparing\|Unpacking\|Setting up\|Processing\):\?' "$log" | tail -25 >&2
        echo "could not build the chroot of $suite for PostgreSQL $major (all of mmdebstrap's output: $log)" >&2
        rm -rf --one-file-system "$partial"
        return 1
    fi
    echo "$recipe" >"$partial/$recipe_file"
    rm -f "$log"
    rm -rf --one-file-system "$chroot_dir"
    mv "$partial" "$chroot_dir"
    echo "chroot built in $((SECONDS - started)) s"
}

if [ "$(cat "$chroot_dir/$recipe_file" 2>/dev/null)" != "$recipe" ]; then
    build_chroot
fi

# This run's copy of the tree, inside the chroot: in a git clone, what git tracks and what it
# would track (new files), as they are in the working tree; in an unpacked release archive,
# every file but the chroots.
tree_files() {
    if git -C "$source_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' file; do [ -e "$source_dir/$file" ] && printf '%s\0' "$file"; done
    else
        (cd "$source_dir" && find . -path ./chroots -prune -o -type f -print0)
    fi
}
run_dir=$(mktemp -d "$chroot_dir/tmp/inbox-tree.XXXXXX")
chmod 755 "$run_dir"
tree_files | tar -C "$source_dir" --null -T - -cf - | tar -xf - -C "$run_dir"
inner_dir=${run_dir#"$chroot_dir"}
# npm (the Node example) reaches its registry as the machine does: its name server, the
# certificate authorities it trusts (a proxy's, say), its proxy settings.
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
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
inner_script='
cd "$1"; shift
echo "PostgreSQL $(pg_config --version | cut -d" " -f2-) in the chroot; building inbox"
if ! make -s -j2; then
    echo "inbox does not build against PostgreSQL '"$major"' ($(pg_config --version))" >&2
    exit 1
fi
test/run.sh "$@"
'
status=0
unshare --fork --kill-child --pid --mount --propagation private -- bash -c '
    set -e
    root=$1
    shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
    exec chroot "$root" "$@"
' mount-and-chroot "$chroot_dir" env -i PATH="$inner_path" HOME=/root LANG=C.UTF-8 \
    TERM="${TERM:-dumb}" "${passed_env[@]}" bash -c "$inner_script" inner "$inner_dir" "${suites[@]}" || status=$?

if ((status == 0)); then
    rm -rf "$run_dir"
    echo "PostgreSQL $major: every suite passed"
else
    echo "PostgreSQL $major: FAILED; the tree and work directories are kept in $chroot_dir/tmp"
fi
exit "$status"
