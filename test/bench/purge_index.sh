#!/usr/bin/env bash
# Which index should find expired markers? Four databases hold the same markers and differ only
# in the index that serves retention:
#   none                   primary key only
#   consumer_processed_at  (consumer, processed_at), as the install script creates it
#   processed_at           B-tree on processed_at
#   brin                   BRIN on processed_at
# and are measured in turns (the order rotates each round, so that the load of a shared machine
# favours none of them):
#   1. purge cost: the batches of CALL inbox.purge() deleting the expired quarter of the markers,
#      in a transaction that is rolled back (so each round purges the same rows; no pauses);
#   2. claim throughput: pgbench calling inbox.claim with random ids, short runs; the ratio to
#      "none" of each round, and the median of those ratios.
#
#   test/bench/purge_index.sh [markers=2000000] [seconds per claim run=3] [rounds=15]
#                             [clients=2] [synchronous_commit=off]
#
# The markers are loaded in processed_at order, as an append-only inbox writes them: the best
# case for BRIN. A quarter is 31 to 40 days old (expired under the default retention, 30 days),
# the rest 1 to 29 days old.
source "$(dirname "$0")/throwaway_cluster.sh"
markers=${1:-2000000}
seconds=${2:-3}
rounds=${3:-15}
clients=${4:-2}
synchronous_commit=${5:-off}
consumers=20
options=(none consumer_processed_at processed_at brin)

start_throwaway_cluster "synchronous_commit = $synchronous_commit
inbox.purge_worker = off
autovacuum = off"
sql postgres "CREATE DATABASE bench_template"
sql bench_template "CREATE EXTENSION inbox"
sql bench_template "DROP INDEX inbox.messages_consumer_processed_at"
echo "loading $markers markers of $consumers consumers..."
sql bench_template "INSERT INTO inbox.messages (consumer, message_id, processed_at)
    SELECT 'consumer-' || (i % $consumers), md5(i::text),
           CASE WHEN i <= $markers / 4
                THEN now() - interval '40 days' + (i::float8 / ($markers / 4)) * interval '9 days'
                ELSE now() - interval '29 days' + (i::float8 / $markers) * interval '28 days' END
    FROM generate_series(1, $markers) i"
sql bench_template "VACUUM ANALYZE inbox.messages"
for option in "${options[@]}"; do
    sql postgres "CREATE DATABASE $option TEMPLATE bench_template"
    case $option in
        consumer_processed_at) sql "$option" "CREATE INDEX ON inbox.messages (consumer, processed_at)" ;;
        processed_at) sql "$option" "CREATE INDEX ON inbox.messages (processed_at)" ;;
        brin) sql "$option" "CREATE INDEX ON inbox.messages USING brin (processed_at)" ;;
    esac
    sql "$option" "VACUUM ANALYZE inbox.messages"
done
sql postgres "CHECKPOINT"

cat >"$bench_work/claim.sql" <<'SCRIPT'
\set c random(1, 20)
SELECT inbox.claim('consumer-' || :c, md5(random()::text || clock_timestamp()::text));
SCRIPT
chown "$bench_user" "$bench_work/claim.sql" 2>/dev/null || true

# The options of round $1, rotated.
rotation() {
    local shift=$(($1 % ${#options[@]}))
    echo "${options[@]:shift}" "${options[@]:0:shift}"
}
median() {
    sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A purge_times claim_ratios claim_tps
purge_rounds=3
for round in $(seq "$purge_rounds"); do
    for option in $(rotation "$round"); do
        start=$(now_s)
        deleted=$(as_bench_user psql -h "$bench_work" -U postgres -d "$option" -qAtX \
            -c "BEGIN" -c "CALL inbox.purge()" -c "ROLLBACK")
        elapsed=$(awk -v a="$(now_s)" -v b="$start" 'BEGIN { print a - b }')
        purge_times[$option]+="$elapsed "
        printf 'purge round %d  %-22s %d markers in %6.2f s\n' "$round" "$option" "$deleted" "$elapsed"
    done
done

for round in $(seq "$rounds"); do
    declare -A tps=()
    for option in $(rotation "$round"); do
        tps[$option]=$(bench_pgbench "$option" -c "$clients" -j "$clients" -T "$seconds" \
            -f "$bench_work/claim.sql" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        claim_tps[$option]+="${tps[$option]} "
    done
    line="claim round $round"
    for option in "${options[@]}"; do
        claim_ratios[$option]+="$(ratio "${tps[$option]}" "${tps[none]}") "
        line+=$(printf '  %s %.0f' "$option" "${tps[$option]}")
    done
    echo "$line"
done

echo
echo "markers: $markers per database, $((markers / 4)) expired; synchronous_commit = $synchronous_commit"
echo "claim: $clients clients, $rounds rounds of $seconds s per option; purge: $purge_rounds rounds"
printf '%-22s %16s %18s %16s %14s\n' option "claim tps (med)" "vs none (median)" "purge s (med)" "purge rows/s"
for option in "${options[@]}"; do
    tps_median=$(echo "${claim_tps[$option]}" | tr ' ' '\n' | grep . | median)
    ratio_median=$(echo "${claim_ratios[$option]}" | tr ' ' '\n' | grep . | median)
    purge_median=$(echo "${purge_times[$option]}" | tr ' ' '\n' | grep . | median)
    printf '%-22s %16.0f %18.3f %16.2f %14.0f\n' "$option" "$tps_median" "$ratio_median" \
        "$purge_median" "$(awk -v e="$((markers / 4))" -v s="$purge_median" 'BEGIN { print e / s }')"
done
