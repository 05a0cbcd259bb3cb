#!/usr/bin/env bash
# The hot path of this tree against another commit's: claim and apply throughput of the two
# builds, each in a throwaway cluster of its own (one library per server), measured in
# alternating pgbench runs (base, head, head, base, ...) so that drift in the machine's load hits
# both alike. Prints each pair and the median ratio head / base.
#   test/bench/compare_builds.sh BASE_REV [seconds-per-run] [rounds] [clients]
set -euo pipefail
base_rev=${1:?usage: compare_builds.sh BASE_REV [seconds] [rounds] [clients]}
seconds=${2:-5}
rounds=${3:-10}
clients=${4:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"

trap 'stop_sides; git -C "$source_dir" worktree remove --force "$work/base/tree" 2>/dev/null; rm -rf "$work"' EXIT

# One private installation and cluster per side: $work/SIDE/{root,cluster}.
prepare_side() {
    local side=$1 tree=$2
    private_side_cluster "$side" "$tree" \
        "shared_buffers = '256MB'" "synchronous_commit = off" "max_wal_size = '4GB'"
    cluster_psql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int
$$;
SQL
}

git -C "$source_dir" worktree add --detach "$work/base/tree" "$base_rev" >/dev/null 2>&1
prepare_side base "$work/base/tree"
prepare_side head "$source_dir"

cat >"$work/claim.sql" <<'SCRIPT'
\set c random(1, 4)
SELECT inbox.claim('consumer-' || :c, md5(random()::text || clock_timestamp()::text));
SCRIPT
cat >"$work/apply.sql" <<'SCRIPT'
\set c random(1, 4)
\set account random(1, 1000)
SELECT inbox.apply('consumer-' || :c, md5(random()::text || clock_timestamp()::text),
                   'credit(jsonb)', jsonb_build_object('account', :account::int, 'amount', 1));
SCRIPT
chmod 644 "$work"/*.sql

tps() {
    local side=$1 script=$2
    as_cluster_user "$work/$side/bindir/pgbench" -h "$work/$side/cluster" -U postgres -n \
        -M prepared -c "$clients" -j "$clients" -T "$seconds" -f "$work/$script.sql" postgres |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

for script in claim apply; do
    ratios=()
    for round in $(seq "$rounds"); do
        if ((round % 2)); then
            base=$(tps base "$script"); head=$(tps head "$script")
        else
            head=$(tps head "$script"); base=$(tps base "$script")
        fi
        ratios+=("$(awk -v h="$head" -v b="$base" 'BEGIN { printf "%.4f", h / b }')")
        printf '  %s round %d: base %s tps, head %s tps, head / base %s\n' "$script" "$round" \
            "$base" "$head" "${ratios[-1]}"
    done
    printf '%s\n' "${ratios[@]}" |
        median_summary '%s = %.3f (range %.3f .. %.3f, %d rounds)\n' "$script: median head / $base_rev"
done
