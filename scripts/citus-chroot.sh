#!/usr/bin/env bash
# Runs the Citus suite against another PostgreSQL major and a Citus release built from source
# (Debian packages no Citus), in a copy of that major's chroot of scripts/major-chroot.sh (run
# as root: scripts/as-root.sh):
#   scripts/citus-chroot.sh MAJOR CITUS_TAG [SUITE ...]
# CITUS_TAG: a tag of Citus's git, such as v13.2.2 (PostgreSQL 15 to 17) or v14.0.1 (16 to 18).
# SUITE: citus by default; any suite major-chroot.sh runs.
# CITUS_GIT: a git directory of Citus to take the tag from; without it, the tag is cloned from
# GitHub.
#
# The copy, citus-TAG/MAJOR-SUITE in the chroots' cache (or under $INBOX_CITUS_CHROOTS;
# major-chroot.sh's chroots are taken from the cache as that script does: $INBOX_CHROOTS, or
# ~/.cache/inbox/chroots, scripts/debian-chroot.sh), is made once from
# major-chroot.sh's chroot (built first when missing), with Citus's build dependencies, and
# Citus built and installed into that major's PostgreSQL; major-chroot.sh then runs the suites
# in it. It is made anew when major-chroot.sh's chroot was built anew. The shared chroot of
# major-chroot.sh stays as it is.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)

(($# >= 2)) || {
    echo "usage: $0 MAJOR CITUS_TAG [SUITE ...]" >&2
    exit 2
}
major=$1 tag=$2
shift 2
suites=("$@")
((${#suites[@]})) || suites=(citus)

# As scripts/debian-chroot.sh keeps them.
chroots=${INBOX_CHROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/inbox/chroots}
citus_chroots=${INBOX_CITUS_CHROOTS:-$chroots}/citus-$tag
recipe_file=etc/inbox-chroot-recipe
citus_file=etc/inbox-citus-tag

# major-chroot.sh's chroot of this major (named MAJOR-SUITE there), built when missing: its run
# of the Citus suite only reports the suite skipped.
base_chroot() { find "$chroots" -maxdepth 1 -name "$major-*" -type d ! -name '*.partial' ! -name '*+*' | head -1; }
if [ -z "$(base_chroot)" ] || [ ! -e "$(base_chroot)/$recipe_file" ]; then
    "$source_dir/scripts/major-chroot.sh" "$major" citus
fi
base=$(base_chroot)
copy=$citus_chroots/$(basename "$base")

# Runs a command as root in the copy, with /proc and /dev mounted for it alone.
in_copy() {
    unshare --fork --kill-child --pid --mount --propagation private -- bash -c '
        set -e
        root=$1
        shift
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        exec chroot "$root" "$@"
    ' in-copy "$copy" env -i PATH="/usr/lib/postgresql/$major/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive bash -c "$1"
}

if ! cmp -s "$base/$recipe_file" "$copy/$recipe_file"; then
    started=$SECONDS
    echo "copying $base into $copy"
    rm -rf --one-file-system "$copy" "$copy.partial"
    mkdir -p "$copy.partial"
    # Without the runs' trees and clusters under /tmp, which come and go while other runs use
    # the chroot.
    tar -C "$base" --one-file-system --exclude='./tmp/*' -cf - . | tar -C "$copy.partial" -xf -
    mv "$copy.partial" "$copy"
    echo "copied in $((SECONDS - started)) s"
fi

if [ "$(cat "$copy/$citus_file" 2>/dev/null)" != "$tag" ]; then
    started=$SECONDS
    echo "building Citus $tag for PostgreSQL $major in $copy"
    source=$copy/tmp/citus-$tag
    rm -rf "$source"
    mkdir -p "$source"
    if [ -n "${CITUS_GIT:-}" ]; then
        git --git-dir="$CITUS_GIT" archive "$tag" | tar -x -C "$source"
    else
        git clone -q --depth 1 --branch "$tag" https://github.com/citusdata/citus.git "$source"
    fi
    cp /etc/resolv.conf "$copy/etc/resolv.conf"
    # Citus's configure needs curl (its statistics collection), lz4 and zstd (columnar
    # compression); PostgreSQL's headers need ICU's, Kerberos' and OpenSSL's. with_llvm=no:
    # no JIT bitcode, which would double the build.
    in_copy "apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        libcurl4-openssl-dev liblz4-dev libzstd-dev libicu-dev libkrb5-dev libssl-dev >/dev/null &&
        cd /tmp/citus-$tag && ./configure -q && make -s -j2 with_llvm=no >/dev/null &&
        make -s install with_llvm=no >/dev/null"
    rm -rf "$source"
    echo "$tag" >"$copy/$citus_file"
    echo "Citus $tag built and installed in $((SECONDS - started)) s"
fi

INBOX_CHROOTS=$citus_chroots "$source_dir/scripts/major-chroot.sh" "$major" "${suites[@]}"
# major-chroot.sh builds its chroot anew when its package list changed since the copy: the run
# then had no Citus.
if [ ! -e "$copy/$citus_file" ]; then
    echo "major-chroot.sh built the chroot anew (its package list changed), without Citus: run $0 again" >&2
    exit 1
fi
