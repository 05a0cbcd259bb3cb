#!/usr/bin/env bash
# Which index should find expired markers? For each option, in interleaved rounds on the same
# table: claim throughput (pgbench, inbox.claim with random ids) and the cost of purging the
# expired quarter of the markers (the batches of CALL inbox.purge(), run in one transaction that
# is rolled back, so every option purges the same rows; no pauses between batches).
#
#   test/bench/purge_index.sh [markers=2000000] [seconds per claim run=10] [rounds=3] [clients=2]
#
# Options: none (primary key only), (consumer, processed_at) as the install script creates it,
# B-tree on processed_at, BRIN on processed_at. Ratios are against "none". The markers are
# loaded in processed_at order, as an append-only inbox writes them: the best case for BRIN.
# A quarter is 31 to 40 days old (expired under the default retention of 30 days), the rest 1
# to 29 days; the markers each claim run adds are deleted again before the next option.
source "$(dirname "$0")/throwaway_cluster.sh"
markers=${1:-2000000}
seconds=${2:-10}
rounds=${3:-3}
clients=${4:-2}
consumers=20

start_throwaway_cluster "synchronous_commit = off
inbox.purge_worker = off"
sql postgres "CREATE EXTENSION inbox"
sql postgres "DROP INDEX inbox.messages_consumer_processed_at"
echo "loading $markers markers of $consumers consumers..."
sql postgres "INSERT INTO inbox.messages (consumer, message_id, processed_at)
    SELECT 'consumer-' || (i % $consumers), md5(i::text),
           CASE WHEN i <= $markers / 4
                THEN now() - interval '40 days' + (i::float8 / ($markers / 4)) * interval '9 days'
                ELSE now() - interval '29 days' + (i::float8 / $markers) * interval '28 days' END
    FROM generate_series(1, $markers) i"
sql postgres "VACUUM ANALYZE inbox.messages"
expired=$(sql postgres "SELECT count(*) FROM inbox.messages WHERE processed_at < now() - interval '30 days'")

cat >"$bench_work/claim.sql" <<'SCRIPT'
\set c random(1, 20)
SELECT inbox.claim('consumer-' || :c, md5(random()::text || clock_timestamp()::text));
SCRIPT
chown "$bench_user" "$bench_work/claim.sql" 2>/dev/null || true

options=(none consumer_processed_at processed_at brin)
index_sql() {
    case $1 in
        none) echo "" ;;
        consumer_processed_at) echo "CREATE INDEX bench_index ON inbox.messages (consumer, processed_at)" ;;
        processed_at) echo "CREATE INDEX bench_index ON inbox.messages (processed_at)" ;;
        brin) echo "CREATE INDEX bench_index ON inbox.messages USING brin (processed_at)" ;;
    esac
}

declare -A claim_tps purge_s
for option in "${options[@]}"; do claim_tps[$option]=0; purge_s[$option]=0; done

for round in $(seq "$rounds"); do
    for option in "${options[@]}"; do
        sql postgres "DELETE FROM inbox.messages WHERE processed_at > now() - interval '12 hours'"
        sql postgres "DROP INDEX IF EXISTS inbox.bench_index"
        create=$(index_sql "$option")
        [ -n "$create" ] && sql postgres "$create"
        sql postgres "VACUUM ANALYZE inbox.messages"
        sql postgres "CHECKPOINT"

        start=$(now_s)
        deleted=$(as_bench_user psql -h "$bench_work" -U postgres -d postgres -qAtX \
            -c "BEGIN" -c "CALL inbox.purge()" -c "ROLLBACK")
        elapsed=$(awk -v a="$(now_s)" -v b="$start" 'BEGIN { print a - b }')
        [ "$deleted" = "$expired" ] || { echo "purge deleted $deleted, expected $expired"; exit 1; }

        tps=$(bench_pgbench postgres -c "$clients" -j "$clients" -T "$seconds" -f "$bench_work/claim.sql" |
            sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        printf 'round %d  %-22s claim %8.0f tps   purge of %d markers %6.2f s\n' \
            "$round" "$option" "$tps" "$expired" "$elapsed"
        claim_tps[$option]=$(awk -v a="${claim_tps[$option]}" -v b="$tps" 'BEGIN { print a + b }')
        purge_s[$option]=$(awk -v a="${purge_s[$option]}" -v b="$elapsed" 'BEGIN { print a + b }')
    done
done

echo
echo "markers: $markers ($expired expired), $clients clients, $seconds s per claim run, $rounds rounds"
printf '%-22s %12s %10s %14s %12s\n' option "claim tps" "vs none" "purge s" "rows/s"
for option in "${options[@]}"; do
    tps=$(awk -v a="${claim_tps[$option]}" -v n="$rounds" 'BEGIN { print a / n }')
    s=$(awk -v a="${purge_s[$option]}" -v n="$rounds" 'BEGIN { print a / n }')
    base=$(awk -v a="${claim_tps[none]}" -v n="$rounds" 'BEGIN { print a / n }')
    printf '%-22s %12.0f %10s %14.2f %12.0f\n' "$option" "$tps" "$(ratio "$tps" "$base")" "$s" \
        "$(awk -v e="$expired" -v s="$s" 'BEGIN { print e / s }')"
done
