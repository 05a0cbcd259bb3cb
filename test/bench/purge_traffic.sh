#!/usr/bin/env bash
# What a running purge costs live traffic: claims/s while CALL inbox.purge() deletes N expired
# markers (test/bench/markers.sh: 4 consumers, random UUID ids, 31 days and more old, retention
# 30 days) against claims/s without it, in the same cluster. The purge starts once and runs
# through the rounds; in each round pgbench claims new random UUIDs for the same consumers
# (1 client by default), once with the purge held back (a session holds the database's purge
# lock, so the purge waits before its next batch) and once with it running, the order
# alternating. Prints each pair, the median and range of the ratios (claims during / without)
# over blocks of two rounds (median_block_ratio in pgbench_compare.sh), and the purge's rate
# beside the traffic. The rounds must end before the purge does: a round
# that finds it finished stops the benchmark.
#   test/bench/purge_traffic.sh [expired markers=5000000] [seconds-per-run=1] [rounds=12] [clients=1]
# synchronous_commit = off: claims are bound by CPU, where a purge beside them weighs most.
set -euo pipefail
expired=${1:-5000000}
seconds=${2:-1}
rounds=${3:-12}
clients=${4:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '8GB'" "checkpoint_timeout = '30min'" \
    "synchronous_commit = off" "inbox.purge_worker = off"

sql postgres "CREATE EXTENSION inbox"
echo "loading $expired expired markers..."
marker_age_s=$((31 * 86400)) marker_insert 1.1 "$expired" | cluster_psql
settle_markers postgres inbox.markers
expired_left() {
    sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'"
}

cat >"$work/claim.sql" <<'SQL'
\set c random(0, 3)
SELECT inbox.claim('consumer-' || :c, gen_random_uuid()::text);
SQL
chmod 644 "$work/claim.sql"
claim_tps() {
    as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -M prepared \
        -c "$clients" -j "$clients" -T "$seconds" -f "$work/claim.sql" postgres |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

# The session that holds the purge back: psql reading statements from a pipe. A purge inside a
# transaction block holds the purge lock until the transaction ends (a retention of ten years
# deletes nothing).
mkfifo "$work/holder"
chown "$cluster_user" "$work/holder" 2>/dev/null || true
cluster_psql -At -c "SET application_name = 'bench holder'" -c "SET inbox.retention = '3650d'" \
    -f "$work/holder" >/dev/null &
exec 3>"$work/holder"
held() {
    sql postgres "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                  WHERE a.application_name = 'bench holder' AND l.locktype = 'advisory'
                    AND l.classid = 1768841848 AND l.objid = 1 AND l.objsubid = 3 AND l.granted"
}
hold_purge() {
    echo "BEGIN; CALL inbox.purge();" >&3
    until [ "$(held)" = 1 ]; do sleep 0.05; done
}
release_purge() {
    echo "COMMIT;" >&3
    while [ "$(held)" = 1 ]; do sleep 0.05; done
}

hold_purge
cluster_psql -At -c "CALL inbox.purge()" >/dev/null 2>&1 &
purge_pid=$!
during() {
    release_purge
    claim_tps
    hold_purge
}

ratios=()
purging_s=0
before=$(expired_left)
for round in $(seq "$rounds"); do
    if ((round % 2)); then
        without=$(claim_tps)
        with=$(during)
    else
        with=$(during)
        without=$(claim_tps)
    fi
    kill -0 "$purge_pid" 2>/dev/null ||
        { echo "the purge ended during round $round: give it more markers or fewer rounds"; exit 1; }
    purging_s=$((purging_s + seconds))
    ratios+=("$(ratio "$with" "$without")")
    printf 'round %d: claims without purge %8.0f/s  during purge %8.0f/s  ratio %s\n' \
        "$round" "$without" "$with" "${ratios[-1]}"
done
purged=$((before - $(expired_left)))
release_purge
exec 3>&-
sql postgres "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'CALL inbox.purge()'" >/dev/null
wait "$purge_pid" || true

echo "$clients claiming clients, $rounds pairs of $seconds s runs, $expired expired markers"
printf '%s\n' "${ratios[@]}" | median_block_ratio "claims/s during a purge / without"
echo "the purge beside the traffic: $purged markers in $purging_s s," \
    "$(awk -v d="$purged" -v s="$purging_s" 'BEGIN { printf "%.0f", d / s }') markers/s"
