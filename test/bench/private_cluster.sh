# Builds this tree, installs it into a private copy of PostgreSQL under $work/root (as
# test/run.sh does: nothing system-wide) and starts a throwaway cluster there with the extension
# preloaded; stops it and removes $work on exit. Sourced by the statistics benchmarks:
#   private_cluster_start [postgresql.conf line ...]     needs $source_dir and $work
source "$source_dir/scripts/cluster.sh"

private_cluster_start() {
    local root="$work/root" dir bindir
    bindir="$work/root$(pg_config --bindir)"
    make -s -C "$source_dir" >/dev/null
    for dir in "$(pg_config --pkglibdir)" "$(pg_config --sharedir)" "$(pg_config --bindir)"; do
        mkdir -p "$root$(dirname "$dir")"
        [ -e "$root$dir" ] || cp -a "$dir" "$root$dir"
    done
    make -s -C "$source_dir" install DESTDIR="$root" >/dev/null
    chown -R "$cluster_user" "$work" 2>/dev/null || true
    export PATH="$bindir:$PATH"
    trap 'cluster_stop; rm -rf "$work"' EXIT
    cluster_start "$bindir" "$work/cluster" \
        "shared_preload_libraries = 'inbox'" "$@"
}
