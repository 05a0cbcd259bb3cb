#!/usr/bin/env bash
# How fast CALL inbox.purge() deletes expired markers, and what it costs live traffic.
#
#   test/bench/purge_rate.sh [expired markers=5000000] [seconds per traffic run=3] [rounds=15]
#                            [clients=2] [synchronous_commit=off]
#
# 1. Purge rate: CALL inbox.purge() outside a transaction block (batches of
#    inbox.purge_batch_size, a commit and a pause after each: what the workers run) on that many
#    expired markers of 10 consumers; rows/s over the whole run.
# 2. Traffic: the table is filled again and a purge started. pgbench clients call inbox.apply
#    (a handler that credits one of 1000 accounts) for the same consumers in short runs, in turns
#    with the purge held (a session holds the database's purge lock, so the purge waits before
#    its next batch) and running. The ratio of each pair of runs (the order alternates), then
#    their median: apply throughput during the purge / without it.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
expired=${1:-5000000}
seconds=${2:-3}
rounds=${3:-15}
clients=${4:-2}
synchronous_commit=${5:-off}

private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'" \
    "synchronous_commit = $synchronous_commit" "inbox.purge_worker = off"
sql postgres "CREATE EXTENSION inbox"
sql postgres "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
    INSERT INTO accounts (id) SELECT generate_series(1, 1000);
    CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS
    \$\$ UPDATE accounts SET balance = balance + (payload ->> 'amount')::int
         WHERE id = (payload ->> 'account')::int \$\$;
    CREATE SEQUENCE expired_ids"

expired_now() {
    sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'"
}

# Fills the table with $expired expired markers (31 to 40 days old; retention 30 days).
fill_expired() {
    sql postgres "INSERT INTO inbox.messages (consumer, message_id, processed_at)
        SELECT 'consumer-' || (n % 10), 'expired-' || n,
               now() - interval '40 days' + (i::float8 / $expired) * interval '9 days'
        FROM (SELECT i, nextval('expired_ids') AS n FROM generate_series(1, $expired) i) s"
    sql postgres "VACUUM ANALYZE inbox.messages"
    sql postgres "CHECKPOINT"
}

echo "loading $expired expired markers..."
fill_expired
start=$(now_s)
deleted=$(cluster_psql -At -c "CALL inbox.purge()")
elapsed=$(awk -v a="$(now_s)" -v b="$start" 'BEGIN { print a - b }')
purge_rate=$(awk -v d="$deleted" -v s="$elapsed" 'BEGIN { printf "%.0f", d / s }')
printf 'purge alone: %d markers in %.1f s = %d rows/s\n' "$deleted" "$elapsed" "$purge_rate"

cat >"$work/apply.sql" <<'SCRIPT'
\set account random(1, 1000)
\set c random(0, 9)
SELECT inbox.apply('consumer-' || :c, md5(random()::text || clock_timestamp()::text),
                   'credit(jsonb)', jsonb_build_object('account', :account, 'amount', 1));
SCRIPT
chown "$cluster_user" "$work/apply.sql" 2>/dev/null || true

apply_tps() {
    as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -c "$clients" \
        -j "$clients" -T "$seconds" -f "$work/apply.sql" postgres | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

# The session that holds the purge back: psql reading statements from a pipe.
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

fill_expired
hold_purge
cluster_psql -At -c "CALL inbox.purge()" >/dev/null 2>&1 &
purge_pid=$!

run_without() { apply_tps; }
run_during() {
    release_purge
    apply_tps
    hold_purge
}

ratios=()
before=$(expired_now)
for round in $(seq "$rounds"); do
    if ((round % 2)); then
        without=$(run_without)
        during=$(run_during)
    else
        during=$(run_during)
        without=$(run_without)
    fi
    kill -0 "$purge_pid" 2>/dev/null || { echo "the purge ended before round $round: use more markers"; exit 1; }
    pair_ratio=$(ratio "$during" "$without")
    ratios+=("$pair_ratio")
    printf 'round %2d  apply without purge %8.0f tps   during purge %8.0f tps   ratio %s\n' \
        "$round" "$without" "$during" "$pair_ratio"
done
purged=$((before - $(expired_now)))
release_purge
exec 3>&-
sql postgres "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query = 'CALL inbox.purge()'" >/dev/null
wait "$purge_pid" || true

median=$(printf '%s\n' "${ratios[@]}" | median)
echo
echo "expired markers: $expired; synchronous_commit = $synchronous_commit"
echo "traffic: $clients apply clients, $rounds pairs of $seconds s runs"
echo "purge rate alone:                     $purge_rate rows/s"
echo "purge rate beside traffic:            $(awk -v d="$purged" -v s="$((seconds * rounds))" 'BEGIN { printf "%.0f", d / s }') rows/s"
echo "apply tps during / without (median):  $median   (rounds: ${ratios[*]})"
