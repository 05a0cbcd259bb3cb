#!/usr/bin/env bash
# Where the CPU of a claim goes, against the hand-written SQL of test/bench/claim_apply_vs_sql.sh:
# instructions per transaction (one prepared statement, executed and committed N times) counted as
# callgrind.sh's instructions_per_transaction counts them (a single-user backend: figures that do
# not depend on the machine's load). Prints, per statement, the instructions of one transaction, and
# for claim the parts the callgrind profile attributes to PostgreSQL's routines: the marker's
# conflict check, index entries and heap tuple, the indexes opened and closed, and the executor
# start and end of the caller's SELECT.
#   test/bench/hot_path_instructions.sh [N=3000]
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
source "$source_dir/test/bench/hot_path_statements.sh"
single_user_bench_start "synchronous_commit = off"
{
    cat "$source_dir/test/bench/hot_path_setup.sql"
    printf '\n%s\n\n' "SELECT inbox.claim('claim', 'first'), inbox.claim('apply', 'first');"
} | single_user -j "$work/setup"

# The statements of TIMES transactions of statement $1 (a line each).
statement_lines() {
    echo "PREPARE s AS ${statement[$1]};"
    yes 'EXECUTE s;' | head -n "$2"
}

declare -A per_transaction
for name in claim insert apply_plpgsql apply_sql apply_sql_atomic statement; do
    per_transaction[$name]=$(instructions_per_transaction "$name" "$calls" "$warm")
    printf '%-17s %7d instructions per transaction\n' "$name" "${per_transaction[$name]}"
done
for pair in claim/insert apply_plpgsql/statement apply_sql/statement apply_sql_atomic/statement; do
    printf '%-27s %s times the instructions\n' "$pair" \
        "$(ratio "${per_transaction[${pair%/*}]}" "${per_transaction[${pair#*/}]}")"
done

# Inclusive instructions per claim of the routines that make up its work.
echo "inside a claim (inclusive, per transaction):"
routines=inbox_claim,standard_ExecutorStart,standard_ExecutorEnd,ExecOpenIndices,ExecCloseIndices
routines+=,ExecInsertIndexTuples,ExecCheckIndexConstraints,heap_insert,SPI_execute_plan
routine_instructions "$work/claim-$calls.out" "$calls" "$routines"
