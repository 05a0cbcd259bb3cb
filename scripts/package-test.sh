#!/usr/bin/env bash
# Tests the Debian package built for one PostgreSQL major (run as root: scripts/as-root.sh;
# `make test-package PG_MAJOR=17` calls it so):
#   scripts/package-test.sh MAJOR [PACKAGE.deb]
# PACKAGE.deb: by default dist/postgresql-MAJOR-inbox_VERSION_*.deb (`make deb PG_MAJOR=MAJOR`),
# VERSION being default_version of inbox.control.
#
# Installs the package with apt, as the README says, into a clean chroot of the Debian suite that
# packages MAJOR (scripts/debian-chroot.sh): one with postgresql-MAJOR and what it depends on, and
# nothing else, built once into MAJOR-SUITE-clean of the chroots' cache (scripts/debian-chroot.sh)
# and used through an overlay, so that every run starts from it as it was built. Then it runs the
# package's own test there, debian/tests/delivery: every file in the package, a cluster that
# preloads the library (pg_createcluster, pg_ctlcluster), the extension created at each version
# and updated, and a message delivered twice whose copy is absorbed.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
source "$source_dir/scripts/debian-chroot.sh"

(($# == 1 || $# == 2)) || { echo "usage: $0 MAJOR [PACKAGE.deb]   (MAJOR: 15, 17, 18 or 19)" >&2; exit 2; }
major=$1
debian_suite "$major"
version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$source_dir/inbox.control")
if (($# == 2)); then
    deb=$2
else
    debs=("$source_dir/dist/postgresql-$major-inbox_${version}_"*.deb)
    deb=${debs[0]}
fi
[ -f "$deb" ] || { echo "no package $deb: build it first (make deb PG_MAJOR=$major)" >&2; exit 1; }

started=$SECONDS
chroot_dir=$chroots/$major-$suite-clean
chroot_ready "$chroot_dir" "postgresql-$major"
chroot_seconds=$((SECONDS - started))

scratch=$(mktemp -d "${TMPDIR:-/tmp}/inbox-package-test.XXXXXX")
trap 'rm -rf --one-file-system "$scratch"' EXIT
# What the chroot gets, through the overlay's upper layer: the package, and the tree for its
# test (which reads the scripts it expects from sql/ and inbox.control).
mkdir -p "$scratch/upper/package-test/inbox"
cp "$deb" "$scratch/upper/package-test/"
tree_files | tar -C "$source_dir" --null -T - -cf - | tar -xf - -C "$scratch/upper/package-test/inbox"

echo "installing $(basename "$deb") into a clean chroot of $suite"
started=$SECONDS
inner_script='
set -e
cd /package-test
# The lists first: the chroot keeps none, and the package depends on more than postgresql-NN
# (inbox-relay: rabbitmq-c, libcurl), which apt fetches as a user'"'"'s apt does.
{ apt-get update -q && apt-get install -y -q ./'"$(basename "$deb")"'; } >apt.log 2>&1 ||
    { cat apt.log; exit 1; }
inbox/debian/tests/delivery
'
status=0
chroot_run --overlay "$scratch" "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -c "$inner_script" || status=$?
if ((status == 0)); then
    echo "PostgreSQL $major: the package passed (chroot ready in $chroot_seconds s, test $((SECONDS - started)) s)"
else
    echo "PostgreSQL $major: the package FAILED its test" >&2
fi
exit "$status"
