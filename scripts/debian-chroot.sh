# Chroots of the Debian suite that packages a PostgreSQL major, built once with mmdebstrap and
# reused. Sourced (as root) by scripts/major-chroot.sh, which runs the test suites in one, and by
# scripts/package-build.sh and scripts/package-test.sh, which build the Debian package in one
# and install it into another.
#
#   debian_suite MAJOR            sets suite, sources (apt's lines) and pin (apt's preferences)
#                                 for that major
#   chroots                       the directory the chroots are kept in: $INBOX_CHROOTS, or
#                                 ${XDG_CACHE_HOME:-$HOME/.cache}/inbox/chroots (of the user who
#                                 runs the scripts: root's), outside the tree, so that a clone
#                                 stays small and every clone shares them
#   chroot_ready DIR PACKAGE...   builds DIR unless it was built from this recipe already
#   chroot_run [--overlay SCRATCH] DIR COMMAND...
#   tree_files                    the files of this tree to copy into a chroot
#
# The caller sets source_dir (the top of the tree) and uses `set -euo pipefail`.
# shellcheck shell=bash disable=SC2154

mirror=http://deb.debian.org/debian
chroots=${INBOX_CHROOTS:-${XDG_CACHE_HOME:-$HOME/.cache}/inbox/chroots}

# MAJOR: 15 (bookworm), 17 (trixie), 18 (sid), 19 (sid, with postgresql-19 from experimental).
debian_suite() {
    local release=
    suite_major=$1
    case $1 in
    15) suite=bookworm ;;
    17) suite=trixie ;;
    18) suite=sid ;;
    19) suite=sid release=experimental ;;
    16)
        echo "no Debian suite packages PostgreSQL 16: build it from source and run" \
            "make test PG_CONFIG=<prefix>/bin/pg_config (CONTRIBUTING.md)" >&2
        exit 2
        ;;
    *)
        echo "PostgreSQL $1: no Debian suite known (15, 17, 18 or 19)" >&2
        exit 2
        ;;
    esac
    sources=("deb $mirror $suite main")
    # PostgreSQL from that release, with the C library it was built against (experimental's
    # postgresql-19 needs a newer one than sid's); everything else from the suite.
    pin=
    if [ -n "$release" ]; then
        sources+=("deb $mirror $release main")
        pin="Package: src:postgresql-$1 src:glibc
Pin: release a=$release
Pin-Priority: 990"
    fi
}

# DIR: a chroot of the suite debian_suite chose, with PACKAGE... (and what they depend on). It is
# built when DIR holds no chroot of that recipe (suite, sources, pin, packages): when the list
# changes, it is built anew. Remove the directory to build it afresh (newer packages).
chroot_ready() {
    local chroot_dir=$1
    shift
    local packages=("$@")
    local recipe recipe_file=etc/inbox-chroot-recipe
    recipe=$(printf '%s\n' "$suite" "${sources[@]}" "$pin" "${packages[@]}")
    [ "$(cat "$chroot_dir/$recipe_file" 2>/dev/null)" = "$recipe" ] && return 0

    command -v mmdebstrap >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap; }
    mkdir -p "$(dirname "$chroot_dir")"
    # Clones share the chroots: one builds a chroot while the others wait for it (and then find
    # it built). The lock is let go once the chroot is ready; runs in it use overlays or copies.
    local lock_fd
    exec {lock_fd}>"$chroot_dir.lock"
    if ! flock -n "$lock_fd"; then
        echo "waiting for another build of $chroot_dir"
        flock "$lock_fd"
    fi
    if [ "$(cat "$chroot_dir/$recipe_file" 2>/dev/null)" = "$recipe" ]; then
        exec {lock_fd}>&-
        return 0
    fi
    local partial=$chroot_dir.partial log=$chroot_dir.log started=$SECONDS
    # --one-file-system: should a killed mmdebstrap have left the machine's /dev mounted in the
    # partial chroot, rm stops there instead of emptying it.
    rm -rf --one-file-system "$partial"
    echo "building the chroot of $suite for PostgreSQL $suite_major in $chroot_dir"
    echo "(once, a few minutes; mmdebstrap's output: $log)"
    local include pin_hooks=()
    include=$(IFS=,; echo "${packages[*]}")
    [ -n "$pin" ] && pin_hooks=(--setup-hook='mkdir -p "$1/etc/apt/preferences.d"'
        --setup-hook="printf '%s\n' '$pin' >\"\$1/etc/apt/preferences.d/inbox-postgresql\"")
    # Built beside its final place and moved there when complete: an interrupted build leaves
    # no chroot that looks ready.
    # The Release files of a mirror frozen at a date (a snapshot) expire, which is no reason
    # not to use them.
    # A line per step of mmdebstrap's, as it starts, with the time spent so far.
    local status=0
    mmdebstrap --variant=apt --mode=root --include="$include" \
        --aptopt='Acquire::Check-Valid-Until "false"' \
        "${pin_hooks[@]}" "$suite" "$partial" "${sources[@]}" 2>&1 |
        tee "$log" | chroot_progress || status=$?
    if ((status != 0)); then
        grep -v '^\(I\|Get\|Selecting\|Preparing\|Unpacking\|Setting up\|Processing\):\?' "$log" | tail -25 >&2
        echo "could not build the chroot of $suite for PostgreSQL $suite_major (all of mmdebstrap's output: $log)" >&2
        rm -rf --one-file-system "$partial"
        exec {lock_fd}>&-
        return 1
    fi
    echo "$recipe" >"$partial/$recipe_file"
    rm -f "$log"
    rm -rf --one-file-system "$chroot_dir"
    mv "$partial" "$chroot_dir"
    exec {lock_fd}>&-
    echo "chroot built in $((SECONDS - started)) s ($(du -sh "$chroot_dir" 2>/dev/null | cut -f1))"
}

# Reads mmdebstrap's output and prints its main steps, each with the seconds since the start.
chroot_progress() {
    local line started=$SECONDS
    while IFS= read -r line; do
        case $line in
        "I: running apt-get update"* | "I: downloading packages"* | "I: extracting archives"* | \
            "I: installing essential packages"* | "I: installing remaining packages"* | \
            "I: cleaning package lists"*)
            printf '  %4d s  %s\n' $((SECONDS - started)) "${line#I: }"
            ;;
        esac
    done
}

# Runs COMMAND... as root in the chroot DIR, with /proc, /dev and a private /dev/shm mounted, in
# a mount namespace and a PID namespace of its own: when it ends, however it ends (an interrupt,
# unshare killed: --kill-child), the mounts go with the namespace and no process it started
# survives it. With --overlay, the chroot is an overlay of DIR whose changes go to
# SCRATCH/upper (files put there beforehand appear in the chroot): DIR stays as it was built.
chroot_run() {
    local overlay=
    if [ "$1" = --overlay ]; then
        overlay=$2
        shift 2
    fi
    local root=$1
    shift
    unshare --fork --kill-child --pid --mount --propagation private -- bash -c '
        set -e
        overlay=$1 root=$2
        shift 2
        if [ -n "$overlay" ]; then
            mkdir -p "$overlay/upper" "$overlay/work" "$overlay/root"
            mount -t overlay overlay \
                -o "lowerdir=$root,upperdir=$overlay/upper,workdir=$overlay/work" "$overlay/root"
            root=$overlay/root
        fi
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
        exec chroot "$root" "$@"
    ' mount-and-chroot "$overlay" "$root" "$@"
}

# The files of the tree (NUL-separated, relative to source_dir): in a git clone, what git
# tracks and what it would track (new files), as they are in the working tree; in an unpacked
# release archive, every file but the chroots.
tree_files() {
    if git -C "$source_dir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$source_dir" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' file; do [ -e "$source_dir/$file" ] && printf '%s\0' "$file"; done
    else
        (cd "$source_dir" && find . -path ./chroots -prune -o -type f -print0)
    fi
}
