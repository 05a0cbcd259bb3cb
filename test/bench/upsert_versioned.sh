#!/usr/bin/env bash
# Benchmark: inbox.upsert_versioned against the same version-guarded upsert written by hand.
#
#   test/bench/upsert_versioned.sh            (after `make`; env: ROUNDS, TRANSACTIONS, CLIENTS, ROWS)
#
# Four variants write the same kind of message, each into its own identical table:
#   function     SELECT inbox.upsert_versioned('bench_function', <message>)
#   hand_typed   (a) a static prepared INSERT ... ON CONFLICT DO UPDATE ... WHERE version <, taking
#                    the fields as typed parameters (the client has decoded the message itself)
#   hand_jsonb   (a') the same static statement taking the same jsonb message, converted by
#                    jsonb_to_record
#   plpgsql      (b) a generic PL/pgSQL function building that upsert with format() + EXECUTE
# The four scripts run in the same pgbench run, interleaved transaction by transaction, with the same
# distribution of ids, amounts and versions.
# A throwaway cluster is started from a private copy of PostgreSQL (as test/run.sh does).
set -euo pipefail

rounds=${ROUNDS:-10}
transactions=${TRANSACTIONS:-20000}
clients=${CLIENTS:-1}
rows=${ROWS:-50000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "fsync = off" "synchronous_commit = off"

cluster_psql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE bench_function (id integer PRIMARY KEY, status text NOT NULL,
                             amount numeric(12, 2), note text, version bigint);
CREATE TABLE bench_hand_typed (LIKE bench_function INCLUDING ALL);
CREATE TABLE bench_hand_jsonb (LIKE bench_function INCLUDING ALL);
CREATE TABLE bench_plpgsql (LIKE bench_function INCLUDING ALL);

-- (b): what a generic helper looks like without the extension: find the key, build the
-- statement with format(), EXECUTE it.
CREATE FUNCTION plpgsql_upsert_versioned(target regclass, state jsonb,
                                         version_column name DEFAULT 'version')
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    key_columns text;
    columns text;
    assignments text;
    written bigint;
BEGIN
    SELECT string_agg(quote_ident(a.attname), ', ') INTO key_columns
    FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
    WHERE i.indrelid = target AND i.indisprimary;
    SELECT string_agg(quote_ident(key), ', '),
           string_agg(format('%I = EXCLUDED.%I', key, key), ', ')
               FILTER (WHERE quote_ident(key) <> ALL (string_to_array(key_columns, ', ')))
    INTO columns, assignments
    FROM jsonb_object_keys(state) AS key;
    EXECUTE format('INSERT INTO %s AS stored (%s) SELECT %s FROM jsonb_populate_record(NULL::%s, $1) '
                   'ON CONFLICT (%s) DO UPDATE SET %s WHERE stored.%I IS NULL OR stored.%I < EXCLUDED.%I',
                   target, columns, columns, target, key_columns, assignments,
                   version_column, version_column, version_column)
    USING state;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written > 0;
END $$;
SQL

# The same message for every variant: a state with a random version, so that over the run both
# paths are taken (a newer version updates, an older one is skipped).
message="('{\"id\": ' || :id || ', \"status\": \"paid\", \"amount\": ' || :amount || ', \"note\": \"invoice paid\", \"version\": ' || :version || '}')::jsonb"
variables="\\set id random(1, $rows)
\\set amount random(1, 100000)
\\set version random(1, 1000000000)"
mkdir -p "$work/scripts" "$work/logs"
cat >"$work/scripts/function.sql" <<EOF
$variables
SELECT inbox.upsert_versioned('bench_function', $message);
EOF
cat >"$work/scripts/hand_typed.sql" <<EOF
$variables
INSERT INTO bench_hand_typed AS stored (id, status, amount, note, version)
VALUES (:id, 'paid', :amount, 'invoice paid', :version)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount,
    note = EXCLUDED.note, version = EXCLUDED.version
WHERE stored.version IS NULL OR stored.version < EXCLUDED.version;
EOF
cat >"$work/scripts/hand_jsonb.sql" <<EOF
$variables
INSERT INTO bench_hand_jsonb AS stored (id, status, amount, note, version)
SELECT id, status, amount, note, version
FROM jsonb_to_record($message) AS incoming(id integer, status text, amount numeric(12, 2), note text, version bigint)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount,
    note = EXCLUDED.note, version = EXCLUDED.version
WHERE stored.version IS NULL OR stored.version < EXCLUDED.version;
EOF
cat >"$work/scripts/plpgsql.sql" <<EOF
$variables
SELECT plpgsql_upsert_versioned('bench_plpgsql', $message);
EOF
chown -R "$cluster_user" "$work/scripts" "$work/logs" 2>/dev/null || true

variants=(function hand_typed hand_jsonb plpgsql)
per_client=$((transactions / clients))
echo "pgbench -M prepared, $clients client(s), $((per_client * clients)) transactions per round, $rounds rounds, $rows rows"
# Each round is ONE pgbench run in which every transaction picks one of the four scripts at random
# (equal weights), so the variants are interleaved transaction by transaction and share whatever
# load the machine has. Each script's average latency is read from pgbench's log of every
# transaction (microseconds; its summary rounds the average to a microsecond, 2% of these
# transactions); a variant's throughput is its inverse, and each round gives a ratio. The medians
# of the ratios over the rounds are reported.
scripts=()
for variant in "${variants[@]}"; do scripts+=(-f "$work/scripts/$variant.sql@1"); done
ratios=""
for ((round = 1; round <= rounds; round++)); do
    log=$work/logs/round$round
    output=$(as_cluster_user pgbench -h "$cluster_dir" -U postgres -n -M prepared -c "$clients" -j "$clients" \
        -t "$per_client" --random-seed="$round" -l --log-prefix="$log" "${scripts[@]}" postgres 2>&1) ||
        { echo "pgbench failed:" >&2; echo "$output" >&2; exit 1; }
    # a log line: client transaction latency_us script_number (in the order of the -f options) ...
    latencies=($(cat "$log".* | awk -v scripts=${#variants[@]} '
        { sum[$4] += $3; count[$4]++ }
        END { for (s = 0; s < scripts; s++) printf "%.4f ", count[s] ? sum[s] / count[s] / 1000 : 0 }'))
    printf 'round %2d latency (ms): function %s  hand_typed %s  hand_jsonb %s  plpgsql %s\n' \
        "$round" "${latencies[@]}"
    ratios+=$(awk -v f="${latencies[0]}" -v a="${latencies[1]}" -v j="${latencies[2]}" \
        -v b="${latencies[3]}" 'BEGIN { printf "%.3f %.3f %.3f\n", a / f, j / f, b / f }')$'\n'
done

median_of_column() {
    awk -v c="$1" 'NF { print $c }' <<<"$ratios" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range_of_column() {
    awk -v c="$1" 'NF { print $c }' <<<"$ratios" | sort -g | sed -n '1p;$p' | paste -sd- | sed 's/-/ .. /'
}
echo
echo "throughput of the function relative to each alternative (median over rounds, [min .. max]):"
echo "  function vs hand_typed (a)  = $(median_of_column 1)x  [$(range_of_column 1)]   (target >= 0.9x)"
echo "  function vs hand_jsonb (a') = $(median_of_column 2)x  [$(range_of_column 2)]"
echo "  function vs plpgsql (b)     = $(median_of_column 3)x  [$(range_of_column 3)]   (target >= 1.5x)"

# Every variant wrote about the same number of rows (each got about a quarter of the messages).
cluster_psql -At <<'SQL'
SELECT 'rows written: function ' || (SELECT count(*) FROM bench_function)
    || ', hand_typed ' || (SELECT count(*) FROM bench_hand_typed)
    || ', hand_jsonb ' || (SELECT count(*) FROM bench_hand_jsonb)
    || ', plpgsql ' || (SELECT count(*) FROM bench_plpgsql);
SQL
