#!/usr/bin/env bash
# A consumer's first claim, this tree against another commit (such as 1.1's last, whose first
# claim had a background worker register the consumer in a transaction of its own): each build
# in a throwaway cluster of its own (one library per server), one pgbench run per build and
# round, the order alternating (base, head, head, base, ...). In each run every transaction
# picks one of two scripts at random, so that both share every moment of the run's load:
#   first   SELECT inbox.claim('new-<random>', <random uuid>): a consumer never seen before;
#   known   SELECT inbox.claim('known', <random uuid>): a registered consumer, a new message.
# Every run gets a fresh database: about half of its transactions register a consumer, and a
# database holds at most 32767 (consumer ids are int2). A first claim of 1.1 waits for a worker
# process to start, connect and commit (about 0.1 s on a loaded machine): keep runs short.
# After each run it counts the consumers whose registry row was written by the transaction of
# their first claim (1.2) rather than by another (1.1's worker). Prints each round's mean
# latencies and the medians of head / base: per first claim, per known claim, and of the first
# claim's latency relative to the known claim's of the same run (which cancels the load's
# drift between the two runs of a round).
#   test/bench/first_claim.sh BASE_REV [transactions-per-run=1000] [rounds=4]
set -euo pipefail
base_rev=${1:?usage: first_claim.sh BASE_REV [transactions-per-run] [rounds]}
transactions=${2:-1000}
rounds=${3:-4}
clients=1

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
trap 'stop_sides; git -C "$source_dir" worktree remove --force "$work/base/tree" 2>/dev/null; rm -rf "$work"' EXIT

git -C "$source_dir" worktree add --detach "$work/base/tree" "$base_rev" >/dev/null 2>&1
for side in base head; do
    tree=$source_dir
    [ "$side" = base ] && tree=$work/base/tree
    private_side_cluster "$side" "$tree" "synchronous_commit = off" "max_wal_size = '4GB'" \
        "inbox.purge_worker = off"
done

pgbench_script first <<'SQL'
\set consumer random(1, 1000000000000)
SELECT inbox.claim('new-' || :consumer, gen_random_uuid()::text);
SQL
pgbench_script known <<'SQL'
SELECT inbox.claim('known', gen_random_uuid()::text);
SQL

# One run on SIDE in a fresh database: the mean latencies of first and known (ms), then the
# first claims and how many of them registered their consumer in their own transaction.
run() {
    local side=$1 round=$2 database="round_$2"
    use_side "$side"
    sql postgres "CREATE DATABASE $database"
    sql "$database" "CREATE EXTENSION inbox"
    sql "$database" "SELECT inbox.claim('known', 'registered')" >/dev/null
    pgbench_latencies "$database" -t "$transactions" --random-seed="$round" \
        -f "$work/first.sql@1" -f "$work/known.sql@1" | paste -sd ' '
    sql "$database" "SELECT count(*), count(*) FILTER (WHERE r.xmin = m.xmin)
        FROM inbox.consumer_registry r JOIN inbox.markers m ON m.consumer_id = r.id
        WHERE r.name LIKE 'new-%'" | tr '|' ' '
    sql postgres "DROP DATABASE $database"
}

declare -A first known new own
first_ratios=() known_ratios=() relative_ratios=()
for round in $(seq "$rounds"); do
    if ((round % 2)); then order="base head"; else order="head base"; fi
    for side in $order; do
        values=($(run "$side" "$round"))
        ((${#values[@]} == 4)) || { echo "round $round failed on $side" >&2; exit 1; }
        first[$side]=${values[0]} known[$side]=${values[1]} new[$side]=${values[2]} own[$side]=${values[3]}
    done
    first_ratios+=("$(ratio "${first[head]}" "${first[base]}")")
    known_ratios+=("$(ratio "${known[head]}" "${known[base]}")")
    relative_ratios+=("$(awk -v fh="${first[head]}" -v kh="${known[head]}" -v fb="${first[base]}" \
        -v kb="${known[base]}" 'BEGIN { printf "%.3f", (fh / kh) / (fb / kb) }')")
    printf '  round %d: first claim base %.3f ms, head %.3f ms (%s); known claim base %.3f ms, head %.3f ms (%s)\n' \
        "$round" "${first[base]}" "${first[head]}" "${first_ratios[-1]}" "${known[base]}" \
        "${known[head]}" "${known_ratios[-1]}"
    printf '    first claims that registered their consumer in their own transaction: base %d of %d, head %d of %d\n' \
        "${own[base]}" "${new[base]}" "${own[head]}" "${new[head]}"
done
printf '%s\n' "${first_ratios[@]}" | median_ratio "time per first claim, head / $base_rev"
printf '%s\n' "${known_ratios[@]}" | median_ratio "time per known claim, head / $base_rev"
printf '%s\n' "${relative_ratios[@]}" | median_ratio "(first / known claim), head / $base_rev"
