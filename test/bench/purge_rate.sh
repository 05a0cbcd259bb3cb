#!/usr/bin/env bash
# How fast CALL inbox.purge() deletes expired markers, and what it costs live traffic.
#
#   test/bench/purge_rate.sh [expired markers=5000000] [seconds per traffic run=15] [rounds=3] [clients=2]
#
# 1. Purge rate: CALL inbox.purge() outside a transaction block (batches of
#    inbox.purge_batch_size, a commit and a pause after each, as the workers run it) on that many
#    expired markers of 10 consumers; rows/s over its whole run.
# 2. Traffic: pgbench clients calling inbox.apply (a handler that credits one of 1000 accounts)
#    for the same consumers, in interleaved runs without a purge and during one (the purge is
#    started just before the run and cancelled after it; the table is refilled to the same
#    number of expired markers before each). Prints the ratio of apply throughput during / without.
source "$(dirname "$0")/throwaway_cluster.sh"
expired=${1:-5000000}
seconds=${2:-15}
rounds=${3:-3}
clients=${4:-2}

start_throwaway_cluster "synchronous_commit = off
inbox.purge_worker = off"
sql postgres "CREATE EXTENSION inbox"
sql postgres "CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
    INSERT INTO accounts (id) SELECT generate_series(1, 1000);
    CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS
    \$\$ UPDATE accounts SET balance = balance + (payload ->> 'amount')::int
         WHERE id = (payload ->> 'account')::int \$\$;
    CREATE SEQUENCE expired_ids"

# Tops the table up to $expired expired markers (31 to 40 days old, default retention 30 days).
fill_expired() {
    local have
    have=$(sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'")
    local missing=$((expired - have))
    if ((missing > 0)); then
        sql postgres "INSERT INTO inbox.messages (consumer, message_id, processed_at)
            SELECT 'consumer-' || (n % 10), 'expired-' || n,
                   now() - interval '40 days' + (i::float8 / $missing) * interval '9 days'
            FROM (SELECT i, nextval('expired_ids') AS n FROM generate_series(1, $missing) i) s"
    fi
    sql postgres "VACUUM ANALYZE inbox.messages"
    sql postgres "CHECKPOINT"
}

echo "loading $expired expired markers..."
fill_expired
start=$(now_s)
deleted=$(as_bench_user psql -h "$bench_work" -U postgres -d postgres -qAtX -c "CALL inbox.purge()")
elapsed=$(awk -v a="$(now_s)" -v b="$start" 'BEGIN { print a - b }')
purge_rate=$(awk -v d="$deleted" -v s="$elapsed" 'BEGIN { printf "%.0f", d / s }')
echo "purge alone: $deleted markers in $elapsed s = $purge_rate rows/s"

cat >"$bench_work/apply.sql" <<'SCRIPT'
\set account random(1, 1000)
\set c random(0, 9)
SELECT inbox.apply('consumer-' || :c, md5(random()::text || clock_timestamp()::text),
                   'credit(jsonb)', jsonb_build_object('account', :account, 'amount', 1));
SCRIPT
chown "$bench_user" "$bench_work/apply.sql" 2>/dev/null || true

apply_tps() {
    bench_pgbench postgres -c "$clients" -j "$clients" -T "$seconds" -f "$bench_work/apply.sql" |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

sum_without=0
sum_during=0
deleted_during=0
for round in $(seq "$rounds"); do
    fill_expired
    without=$(apply_tps)

    fill_expired
    as_bench_user psql -h "$bench_work" -U postgres -d postgres -qAtX \
        -c "SET application_name = 'bench purge'" -c "CALL inbox.purge()" \
        >"$bench_work/purge.out" 2>&1 &
    purge_pid=$!
    before=$(sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'")
    during=$(apply_tps)
    sql postgres "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench purge'" >/dev/null
    wait "$purge_pid" || true
    after=$(sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'")
    purged=$((before - after))

    printf 'round %d  apply without purge %8.0f tps   during purge %8.0f tps (%s)   purged meanwhile %d\n' \
        "$round" "$without" "$during" "$(ratio "$during" "$without")" "$purged"
    sum_without=$(awk -v a="$sum_without" -v b="$without" 'BEGIN { print a + b }')
    sum_during=$(awk -v a="$sum_during" -v b="$during" 'BEGIN { print a + b }')
    deleted_during=$((deleted_during + purged))
done

echo
echo "expired markers: $expired, $clients apply clients, $seconds s per run, $rounds rounds"
echo "purge rate alone:            $purge_rate rows/s"
echo "purge rate beside traffic:   $(awk -v d="$deleted_during" -v s="$((seconds * rounds))" 'BEGIN { printf "%.0f", d / s }') rows/s"
echo "apply tps during / without:  $(ratio "$sum_during" "$sum_without")"
