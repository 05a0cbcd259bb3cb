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
#      "none" of each round, and the median of those ratios;
#   3. claim CPU cost: a procedure claims random ids, committing each, in one session whose CPU
#      time (utime + stime of the backend, from /proc) is read before and after. CPU time does
#      not count the waits for a core that other work on the machine causes, so it shows the
#      cost of the index when throughput runs are noisy; the throughput ratio follows from it.
#
#   test/bench/purge_index.sh [markers=2000000] [seconds per claim run=3] [rounds=15]
#                             [clients=2] [synchronous_commit=off]
#
# The markers are loaded in processed_at order, as an append-only inbox writes them: the best
# case for BRIN. A quarter is 31 to 40 days old (expired under the default retention, 30 days),
# the rest 1 to 29 days old.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
markers=${1:-2000000}
seconds=${2:-3}
rounds=${3:-15}
clients=${4:-2}
synchronous_commit=${5:-off}
consumers=20
options=(none consumer_processed_at processed_at brin)

private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'" \
    "synchronous_commit = $synchronous_commit" "inbox.purge_worker = off" "autovacuum = off"
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
    sql "$option" "CREATE PROCEDURE claim_random(n int) LANGUAGE plpgsql AS \$\$
        BEGIN
            FOR i IN 1 .. n LOOP
                PERFORM inbox.claim('consumer-' || (1 + (random() * 19)::int),
                                    md5(random()::text || clock_timestamp()::text));
                COMMIT;
            END LOOP;
        END \$\$"
done
sql postgres "CHECKPOINT"

cat >"$work/claim.sql" <<'SCRIPT'
\set c random(1, 20)
SELECT inbox.claim('consumer-' || :c, md5(random()::text || clock_timestamp()::text));
SCRIPT
chown "$cluster_user" "$work/claim.sql" 2>/dev/null || true

# The options of round $1, rotated.
rotation() {
    local shift=$(($1 % ${#options[@]}))
    echo "${options[@]:shift}" "${options[@]:0:shift}"
}

# CPU seconds of the backend of the session for $2 claims in database $1.
claim_cpu_seconds() {
    local cpu="(SELECT (split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint)
                FROM pg_read_file('/proc/self/stat') s)"
    cluster_psql -d "$1" -At -c "CREATE TEMP TABLE cpu AS SELECT $cpu AS ticks" \
        -c "CALL claim_random($2)" -c "SELECT ($cpu - ticks)::float8 / $(getconf CLK_TCK) FROM cpu"
}

declare -A purge_times claim_ratios claim_tps cpu_seconds cpu_ratios
cpu_claims=50000
purge_rounds=3
for round in $(seq "$purge_rounds"); do
    for option in $(rotation "$round"); do
        start=$(now_s)
        deleted=$(cluster_psql -d "$option" -At -c "BEGIN" -c "CALL inbox.purge()" -c "ROLLBACK")
        elapsed=$(awk -v a="$(now_s)" -v b="$start" 'BEGIN { print a - b }')
        purge_times[$option]+="$elapsed "
        printf 'purge round %d  %-22s %d markers in %6.2f s\n' "$round" "$option" "$deleted" "$elapsed"
    done
done

# $rounds rounds of MEASURE OPTION for every option, in rotated order: each value is added to the
# array named VALUES, its ratio to that of "none" in the round to the array named RATIOS, and a
# line a round shows the values (printf FORMAT).
#   measure_rounds LABEL FORMAT VALUES RATIOS MEASURE
measure_rounds() {
    local label=$1 format=$2 measure=$5 round option line
    local -n all_values=$3 all_ratios=$4
    local -A value
    for round in $(seq "$rounds"); do
        value=()
        for option in $(rotation "$round"); do
            value[$option]=$("$measure" "$option")
            all_values[$option]+="${value[$option]} "
        done
        line="$label round $round"
        for option in "${options[@]}"; do
            all_ratios[$option]+="$(ratio "${value[$option]}" "${value[none]}") "
            line+=$(printf "  %s $format" "$option" "${value[$option]}")
        done
        echo "$line"
    done
}
claim_tps_of() {
    as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -c "$clients" \
        -j "$clients" -T "$seconds" -f "$work/claim.sql" "$1" | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
claim_cpu_of() { claim_cpu_seconds "$1" "$cpu_claims"; }
measure_rounds claim '%.0f' claim_tps claim_ratios claim_tps_of
measure_rounds "claim CPU" '%.2fs' cpu_seconds cpu_ratios claim_cpu_of

echo
echo "markers: $markers per database, $((markers / 4)) expired; synchronous_commit = $synchronous_commit"
echo "claim: $clients clients, $rounds rounds of $seconds s per option; purge: $purge_rounds rounds"
echo "claim CPU: $rounds rounds of $cpu_claims claims per option, one session each"
printf '%-22s %10s %9s %13s %13s %9s %12s\n' option "claim tps" "vs none" "CPU us/claim" \
    "CPU vs none" "purge s" "purge rows/s"
medians() { tr ' ' '\n' | grep . | median; }
for option in "${options[@]}"; do
    tps_median=$(echo "${claim_tps[$option]}" | medians)
    ratio_median=$(echo "${claim_ratios[$option]}" | medians)
    cpu_median=$(echo "${cpu_seconds[$option]}" | medians)
    cpu_ratio=$(echo "${cpu_ratios[$option]}" | medians)
    purge_median=$(echo "${purge_times[$option]}" | medians)
    printf '%-22s %10.0f %9.3f %13.1f %13.3f %9.2f %12.0f\n' "$option" "$tps_median" \
        "$ratio_median" "$(awk -v s="$cpu_median" -v n="$cpu_claims" 'BEGIN { print s * 1e6 / n }')" \
        "$cpu_ratio" "$purge_median" \
        "$(awk -v e="$((markers / 4))" -v s="$purge_median" 'BEGIN { print e / s }')"
done
echo "(medians over the rounds; \"vs none\" is the median of each round's ratio; throughput"
echo " follows CPU cost as 1 / (CPU vs none) where the claim is bound by CPU)"
