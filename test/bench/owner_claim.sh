#!/usr/bin/env bash
# What the owner check costs a claim: inbox.claim of a consumer with an owner, claimed by a member
# of the owner (an ordinary role, the path that asks PostgreSQL for the membership), against the
# same claim of a consumer without one, and against BASE_REV, a tree before owners (as 1.1, no
# check at all). Each consumer is compared with itself in the other build (the two consumers'
# markers differ, and so may their claims' costs). Two measures:
#  - instructions per claim (callgrind, single-user backend, a prepared claim executed in a
#    transaction each): independent of the machine's load, one run per case;
#  - throughput, each build in a throwaway cluster of its own; in each pgbench run every
#    transaction picks the open or the owned consumer at random (so the two share every moment
#    of the load), and the runs alternate between the builds (base, head, head, base, ...).
#   test/bench/owner_claim.sh BASE_REV [executions] [seconds-per-run] [rounds] [clients]
set -euo pipefail
base_rev=${1:?usage: owner_claim.sh BASE_REV [executions] [seconds] [rounds] [clients]}
executions=${2:-5000}
seconds=${3:-5}
rounds=${4:-10}
clients=${5:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
trap 'stop_sides; git -C "$source_dir" worktree remove --force "$work/base/tree" 2>/dev/null; rm -rf "$work"' EXIT

# The consumers open and owned, and the role that claims: a member of owned's owner. Before
# owners (base) both are open.
consumers_sql() {
    local side=$1
    cat <<'SQL'
CREATE EXTENSION inbox;
CREATE ROLE owners;
CREATE ROLE service IN ROLE owners;
SELECT inbox.grant_access('service', 'consume');
SELECT inbox.claim('open', 'registered');
SQL
    if [ "$side" = head ]; then
        echo "SELECT inbox.configure_consumer('owned', owner => 'owners');"
    else
        echo "SELECT inbox.configure_consumer('owned');"
    fi
}

prepare_side() {
    local side=$1 tree=$2
    private_side_cluster "$side" "$tree" \
        "shared_buffers = '256MB'" "synchronous_commit = off" "max_wal_size = '4GB'"
    use_side "$side"
    { consumers_sql "$side"; echo "ALTER DATABASE postgres SET role = 'service';"; } |
        cluster_psql -q >/dev/null
    single_user_init "$work/$side/bindir" "$work/$side/data"
    consumers_sql "$side" | sed 's/$/\n/' | single_user -j "$work/$side/setup"
}

git -C "$source_dir" worktree add --detach "$work/base/tree" "$base_rev" >/dev/null 2>&1
prepare_side base "$work/base/tree"
prepare_side head "$source_dir"

echo "instructions per claim ($executions claims, a transaction each, as the member role):"
for side in base head; do
    single_user_use "$work/$side/bindir" "$work/$side/data"
    for consumer in open owned; do
        count=$({
            printf "SET ROLE service;\n\nPREPARE measured AS SELECT inbox.claim('%s', gen_random_uuid()::text);\n\n" "$consumer"
            printf 'EXECUTE measured;\n\n%.0s' $(seq "$executions")
        } | callgrind_count -j "$work/$side/$consumer" inbox_claim)
        eval "${side}_${consumer}=\$((count / executions))"
    done
done
printf '  %-28s %s\n' "base ($base_rev), open" "$base_open" "base ($base_rev), owned (open)" \
    "$base_owned" "head, open" "$head_open" "head, owned" "$head_owned"
printf '  without an owner: head / base %s; with an owner: head / base %s\n' \
    "$(ratio "$head_open" "$base_open")" "$(ratio "$head_owned" "$base_owned")"

for consumer in open owned; do
    pgbench_script "$consumer" <<SCRIPT
SELECT inbox.claim('$consumer', md5(random()::text || clock_timestamp()::text));
SCRIPT
done
echo "throughput ($rounds rounds of $seconds s per build, $clients client(s)):"
latencies() {
    use_side "$1"
    pgbench_latencies postgres -T "$seconds" --random-seed="$round" \
        -f "$work/open.sql@1" -f "$work/owned.sql@1"
}
open_ratios=() owned_ratios=()
for round in $(seq "$rounds"); do
    if ((round % 2)); then
        base=($(latencies base)); head=($(latencies head))
    else
        head=($(latencies head)); base=($(latencies base))
    fi
    # throughput ratios: the inverse of the mean latencies'
    open_ratios+=("$(awk -v a="${head[0]}" -v b="${base[0]}" 'BEGIN {printf "%.6f", b / a}')")
    owned_ratios+=("$(awk -v a="${head[1]}" -v b="${base[1]}" 'BEGIN {printf "%.6f", b / a}')")
    printf '  round %d: base open %.3f ms owned %.3f ms; head open %.3f ms owned %.3f ms\n' \
        "$round" "${base[0]}" "${base[1]}" "${head[0]}" "${head[1]}"
done
printf '%s\n' "${open_ratios[@]}" | median_block_ratio "without an owner, head / base"
printf '%s\n' "${owned_ratios[@]}" | median_block_ratio "with an owner, head / base"
