#!/usr/bin/env bash
# Benchmark: inbox.upsert_versioned against the same version-guarded upsert written by hand.
#
#   test/bench/upsert_versioned.sh            (after `make`; env: ROUNDS, TRANSACTIONS, CLIENTS)
#
# Four variants write the same messages, each into its own identical table:
#   function     SELECT inbox.upsert_versioned('bench_function', <message>)
#   hand_typed   (a) a static prepared INSERT ... ON CONFLICT DO UPDATE ... WHERE version <, taking
#                    the fields as typed parameters (the client has decoded the message itself)
#   hand_jsonb   (a') the same static statement taking the message as jsonb (jsonb_to_record), i.e.
#                    exactly the statement the function prepares, written by hand
#   plpgsql      (b) a generic PL/pgSQL function building that upsert with format() + EXECUTE
# Every variant gets the same ids, amounts and versions (same pgbench random seed, fixed number of
# transactions); the variants are interleaved round by round.
# A throwaway cluster is started from a private copy of PostgreSQL (as test/run.sh does).
set -euo pipefail

rounds=${ROUNDS:-10}
transactions=${TRANSACTIONS:-10000}
clients=${CLIENTS:-1}
rows=${ROWS:-50000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -eq 0 ]; then bench_user=postgres; else bench_user=$(id -un); fi
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
root="$work/root"
for dir in "$(pg_config --pkglibdir)" "$(pg_config --sharedir)" "$(pg_config --bindir)"; do
    mkdir -p "$root$(dirname "$dir")"
    cp -a "$dir" "$root$dir"
done
make -s -C "$source_dir" install DESTDIR="$root" >/dev/null
export PATH="$root$(pg_config --bindir):$PATH"
chown -R "$bench_user" "$work" 2>/dev/null || true

as_bench_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$bench_user" -- env PATH="$PATH" "$@"; else "$@"; fi
}
cluster="$work/cluster"
stop() {
    as_bench_user pg_ctl -D "$cluster" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT

as_bench_user initdb -D "$cluster" -A trust -U postgres --no-sync >/dev/null
cat >>"$cluster/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'inbox'
fsync = off
synchronous_commit = off
EOF
as_bench_user pg_ctl -D "$cluster" -l "$work/cluster.log" -w start >/dev/null
psql_bench() { as_bench_user psql -h "$work" -U postgres -d postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

psql_bench <<'SQL'
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
mkdir -p "$work/scripts"
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
chown -R "$bench_user" "$work/scripts" 2>/dev/null || true

variants=(function hand_typed hand_jsonb plpgsql)
per_client=$((transactions / clients))
echo "pgbench -M prepared, $clients client(s), $((per_client * clients)) transactions per run, $rounds rounds, $rows rows"
# Each round runs every variant once, in alternating order (forward, then backward) so that drift
# in the machine's load does not favour one of them; a ratio is taken within each round, and the
# medians of those ratios are reported.
declare -A tps
ratios=""
for ((round = 1; round <= rounds; round++)); do
    order=("${variants[@]}")
    ((round % 2)) || order=(plpgsql hand_jsonb hand_typed function)
    for variant in "${order[@]}"; do
        tps[$variant]=$(as_bench_user pgbench -h "$work" -U postgres -n -M prepared -c "$clients" \
            -j "$clients" -t "$per_client" --random-seed="$round" -f "$work/scripts/$variant.sql" postgres 2>&1 |
            sed -n 's/^tps = \([0-9.]*\).*/\1/p')
        [ -n "${tps[$variant]}" ] || { echo "pgbench failed for $variant" >&2; exit 1; }
    done
    ratios+=$(awk -v f="${tps[function]}" -v a="${tps[hand_typed]}" -v j="${tps[hand_jsonb]}" \
        -v b="${tps[plpgsql]}" 'BEGIN { printf "%.3f %.3f %.3f\n", f / a, f / j, f / b }')$'\n'
    printf 'round %2d tps: function %6.0f  hand_typed %6.0f  hand_jsonb %6.0f  plpgsql %6.0f\n' \
        "$round" "${tps[function]}" "${tps[hand_typed]}" "${tps[hand_jsonb]}" "${tps[plpgsql]}"
done

median_of_column() {
    awk -v c="$1" 'NF { print $c }' <<<"$ratios" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo
echo "median over rounds of the in-round tps ratio:"
echo "  function / hand_typed (a)  = $(median_of_column 1)x   (target >= 0.9x)"
echo "  function / hand_jsonb (a') = $(median_of_column 2)x"
echo "  function / plpgsql (b)     = $(median_of_column 3)x   (target >= 1.5x)"

# The variants must have written the same thing: same rows, same versions.
psql_bench -At <<'SQL'
SELECT 'tables agree: ' || (count(DISTINCT (n, v)) = 1)
FROM (SELECT 'f', count(*), sum(version) FROM bench_function
      UNION ALL SELECT 'a', count(*), sum(version) FROM bench_hand_typed
      UNION ALL SELECT 'j', count(*), sum(version) FROM bench_hand_jsonb
      UNION ALL SELECT 'b', count(*), sum(version) FROM bench_plpgsql) AS t(variant, n, v);
SQL
