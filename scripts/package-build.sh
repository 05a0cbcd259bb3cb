#!/usr/bin/env bash
# Builds the Debian package of the extension for one PostgreSQL major (run as root:
# scripts/as-root.sh; `make deb PG_MAJOR=17` calls it so):
#   scripts/package-build.sh MAJOR
# into dist/postgresql-MAJOR-inbox_VERSION_ARCH.deb, VERSION being default_version of
# inbox.control (debian/changelog must agree: scripts/check-meta.py).
#
# Built the Debian way, from debian/ (pg_buildext, dh with the pgxs_loop addon), by
# dpkg-buildpackage in a chroot of the Debian suite that packages MAJOR (scripts/debian-chroot.sh:
# bookworm for 15, trixie for 17, sid for 18, sid with experimental's PostgreSQL for 19), so the
# machine needs no packaging tools. That chroot holds only build-essential and what debian/control
# names to build with, as on Debian's build daemons: a build dependency missing from this list
# fails the build. It is built once into MAJOR-SUITE-packaging of the chroots' cache, outside the
# tree (scripts/debian-chroot.sh: ~/.cache/inbox/chroots of root, or $INBOX_CHROOTS), a line per
# step, and every build runs in an overlay of it, on a copy of the working tree's files: each
# build starts from the chroot as it was built.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
source "$source_dir/scripts/debian-chroot.sh"

(($# == 1)) || { echo "usage: $0 MAJOR   (15, 17, 18 or 19)" >&2; exit 2; }
major=$1
debian_suite "$major"
"$source_dir/scripts/check-meta.py"
version=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$source_dir/inbox.control")

# build-essential and debian/control's Build-Depends (postgresql-server-dev-all brings pg_buildext
# and the pgxs addon of dh), and the server headers of MAJOR when it is not the suite's default.
packages=(build-essential debhelper postgresql-server-dev-all "postgresql-server-dev-$major"
    libpq-dev librabbitmq-dev libssl-dev libcurl4-openssl-dev)
chroot_dir=$chroots/$major-$suite-packaging
chroot_ready "$chroot_dir" "${packages[@]}"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/inbox-package-build.XXXXXX")
trap 'rm -rf --one-file-system "$scratch"' EXIT
# The copy of the tree goes into the overlay's upper layer: /build/inbox in the chroot, the
# package lands beside it in /build.
mkdir -p "$scratch/upper/build/inbox"
tree_files | tar -C "$source_dir" --null -T - -cf - | tar -xf - -C "$scratch/upper/build/inbox"

echo "building postgresql-$major-inbox $version in a chroot of $suite"
started=$SECONDS
# debian/control as committed names the packages of one major: regenerated for MAJOR, as
# pg_buildext does for the PostgreSQL versions a build system supports. --jobs-force: the make of
# pg_buildext runs with two jobs too (--jobs only tells debian/rules it may).
inner_script='
set -e
cd /build/inbox
pg_buildext updatecontrol
dpkg-buildpackage --build=binary --no-sign --jobs-force=2
'
mkdir -p "$source_dir/dist"
log=$source_dir/dist/postgresql-$major-inbox_$version.build.log
if ! chroot_run --overlay "$scratch" "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 PG_SUPPORTED_VERSIONS="$major" DEB_BUILD_OPTIONS=noddebs \
    bash -c "$inner_script" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "PostgreSQL $major: the package did not build (all of the build's output: $log)" >&2
    exit 1
fi

debs=("$scratch/upper/build/postgresql-$major-inbox_${version}_"*.deb)
[ -f "${debs[0]}" ] ||
    { echo "no postgresql-$major-inbox_${version}_*.deb was built (see $log)" >&2; exit 1; }
deb=$source_dir/dist/$(basename "${debs[0]}")
cp "${debs[0]}" "$deb"
# Owned like the tree, also when built through sudo.
chown "$(stat -c %u:%g "$source_dir")" "$source_dir/dist" "$deb" "$log"
echo "dist/$(basename "$deb") built in $((SECONDS - started)) s"
