#!/usr/bin/env bash
# Where the CPU of inbox.upsert_versioned goes, against the static statement it replaces
# (upsert_versioned.sh's hand_jsonb: INSERT ... SELECT FROM jsonb_to_record(message) ON CONFLICT DO
# UPDATE ... WHERE version <): instructions per transaction (one prepared statement, executed and
# committed N times) counted as callgrind.sh's instructions_per_transaction counts them (a
# single-user backend: figures that do not depend on the machine's load). Both take the same
# messages, built from the statement's parameter n as upsert_versioned.sh builds them (a text cast
# to jsonb): ids cycle over 500 rows and versions are scrambled, so both the update and the stale
# path are taken, alike on both sides. Then, per transaction, the inclusive instructions of the
# routines the work is made of. The single-user backend prints the function's boolean and its
# description for every EXECUTE (debugStartup, debugtup), which a client over the protocol does not
# pay (a DataRow of one boolean): the ratio is given again without them. Last, the count a pgbench
# run sees: both statements sent by pgbench (-M prepared, one connection, N and 200 transactions) to
# a server under callgrind, the backend's instructions per transaction; n is drawn at random from a
# fixed seed, so the first 200 transactions of the longer run are those of the shorter.
#   test/bench/upsert_instructions.sh [N=3000]     (env KEEP=1 keeps the profiles, *.out)
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
single_user_bench_start "synchronous_commit = off"
setup="CREATE EXTENSION inbox;

CREATE TABLE bench_function (id integer PRIMARY KEY, status text NOT NULL,
                             amount numeric(12, 2), note text, version bigint);

CREATE TABLE bench_hand_jsonb (LIKE bench_function INCLUDING ALL);
"
single_user -j "$work/setup" <<<"$setup"

message="('{\"id\": ' || \$1 % 500 + 1 || ', \"status\": \"paid\", \"amount\": ' || \$1 % 100000 || ', \"note\": \"invoice paid\", \"version\": ' || \$1 * 7919 % 1000003 || '}')::jsonb"
declare -A statement=(
    [function]="SELECT inbox.upsert_versioned('bench_function', $message)"
    [hand_jsonb]="INSERT INTO bench_hand_jsonb AS stored (id, status, amount, note, version)
SELECT id, status, amount, note, version
FROM jsonb_to_record($message) AS incoming(id integer, status text, amount numeric(12, 2), note text, version bigint)
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, amount = EXCLUDED.amount,
    note = EXCLUDED.note, version = EXCLUDED.version
WHERE stored.version IS NULL OR stored.version < EXCLUDED.version"
)

# The statements of TIMES transactions of statement $1 (a line each, n = 1, 2, ...), after
# emptying the tables, so that every run finds the same rows.
statement_lines() {
    echo "TRUNCATE bench_function, bench_hand_jsonb;"
    echo "PREPARE s(bigint) AS ${statement[$1]//$'\n'/ };"
    seq -f 'EXECUTE s(%.0f);' "$2"
}

# Each one's instructions per transaction, their ratio, and what these routines take in each.
routines=exec_simple_query,PortalRun,ExecutorRun,inbox_upsert_versioned,ExecInsert,ExecOnConflictUpdate
routines+=,SPI_connect,SPI_execute_plan,SPI_execute_plan_with_paramlist,SPI_finish,GetCachedPlan
routines+=,jsonb_to_record,jsonb_in,LockRelationOid,get_attnum,lookup_target_table
routines+=,lookup_statement,make_typed_parameters,InputFunctionCall,GetTransactionSnapshot
routines+=,CommitTransaction,StartTransaction,standard_ExecutorStart,standard_ExecutorEnd
routines+=,ExecInitNode,ExecCheckPermissions,ExecCheckRTPerms,AcquireExecutorLocks
routines+=,debugStartup,debugtup
comparison=$(compare_instructions function hand_jsonb "$calls" "$warm" "$routines")
echo "$comparison"
printing=$(routine_instructions "$work/function-$calls.out" "$calls" debugStartup,debugtup |
    awk '{ sum += $2 } END { print sum + 0 }')
read -r function_total hand_total < <(awk '/instructions per transaction/ { printf "%s ", $2 } END { print "" }' <<<"$comparison")
printf 'function without printing its result (%d): %s times the instructions\n' "$printing" \
    "$(ratio $((function_total - printing)) "$hand_total")"

callgrind_cluster_start "$work/protocol" "synchronous_commit = off"
protocol_psql() {
    as_cluster_user "$private_bindir/psql" -h "$work/protocol" -U postgres -d postgres -X -q \
        -v ON_ERROR_STOP=1 "$@"
}
trap 'as_cluster_user "$private_bindir/pg_ctl" -D "$work/protocol/data" -m immediate -w stop \
    >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
backend_instructions setup protocol_psql -c "$setup" >/dev/null
declare -A protocol
for side in function hand_jsonb; do
    printf '\\set n random(1, 1000000)\n%s;\n' "${statement[$side]//\$1/(:n::bigint)}" >"$work/$side.pgbench"
    chmod 644 "$work/$side.pgbench"
    counted=()
    for times in "$calls" "$warm"; do
        backend_instructions truncate protocol_psql -c "TRUNCATE bench_function, bench_hand_jsonb" >/dev/null
        counted+=("$(backend_instructions "$side-$times" as_cluster_user "$private_bindir/pgbench" -h "$work/protocol" \
            -U postgres -n -M prepared -c 1 -t "$times" --random-seed=1 -f "$work/$side.pgbench" postgres)")
    done
    protocol[$side]=$(((counted[0] - counted[1]) / (calls - warm)))
    printf '%-15s %7d instructions per transaction over the protocol (pgbench -M prepared)\n' \
        "$side" "${protocol[$side]}"
done
printf 'over the protocol, function / hand_jsonb: %s times the instructions\n' \
    "$(ratio "${protocol[function]}" "${protocol[hand_jsonb]}")"
