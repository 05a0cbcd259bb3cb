#!/usr/bin/env bash
# Where the CPU of inbox.upsert_versioned goes, against the static statement it replaces
# (upsert_versioned.sh's hand_jsonb: INSERT ... SELECT FROM jsonb_to_record(message) ON CONFLICT
# DO UPDATE ... WHERE version <): instructions per transaction (one prepared statement, executed
# and committed N times) counted by callgrind in a single-user backend, so that the figures do
# not depend on the machine's load. Both take the same messages, built from the statement's
# parameter n as upsert_versioned.sh builds them (a text cast to jsonb): ids cycle over 500 rows
# and versions are scrambled, so both the update and the stale path are taken, alike on both
# sides. Each statement runs twice, N and 200 times, and the difference is divided by N - 200,
# which leaves out the backend's start and the first executions. Then, per transaction, the
# inclusive instructions of the routines the work is made of.
#   test/bench/upsert_instructions.sh [N=3000]     (env KEEP=1 keeps the profiles, *.out)
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
private_build
single_user_init "$private_bindir" "$work/data" "synchronous_commit = off"
single_user -j "$work/setup" <<'SQL'
CREATE EXTENSION inbox;

CREATE TABLE bench_function (id integer PRIMARY KEY, status text NOT NULL,
                             amount numeric(12, 2), note text, version bigint);

CREATE TABLE bench_hand_jsonb (LIKE bench_function INCLUDING ALL);

SQL

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
compare_instructions function hand_jsonb "$calls" "$warm" "$routines"
