#!/usr/bin/env bash
# Where the CPU of a claim goes, against the hand-written SQL of test/bench/claim_apply_vs_sql.sh:
# instructions per transaction (one prepared statement, executed and committed N times) counted
# by callgrind in a single-user backend, so that the figures do not depend on the machine's
# load. Each statement runs twice, N and 200 times, and the difference is divided by N - 200,
# which leaves out the backend's start and the first executions. Prints, per statement, the
# instructions of one transaction, and for claim the parts the callgrind profile attributes to
# PostgreSQL's routines: the marker's conflict check, index entries and heap tuple, the indexes
# opened and closed, and the executor start and end of the caller's SELECT.
#   test/bench/hot_path_instructions.sh [N=3000]
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
source "$source_dir/test/bench/hot_path_statements.sh"
trap 'rm -rf "$work"' EXIT
private_build
single_user_init "$private_bindir" "$work/data" "synchronous_commit = off"
{
    cat "$source_dir/test/bench/hot_path_setup.sql"
    printf '\n%s\n\n' "SELECT inbox.claim('claim', 'first'), inbox.claim('apply', 'first');"
} | single_user -j "$work/setup"

# Instructions of a single-user backend executing statement $1 $2 times (a line each: a
# transaction each); the profile is kept in $work/$1-$2.out.
instructions() {
    local name=$1 times=$2
    { echo "PREPARE s AS ${statement[$name]};"; yes 'EXECUTE s;' | head -n "$times"; } >"$work/$name-$times.sql"
    chmod 644 "$work/$name-$times.sql"
    callgrind_count "$work/$name-$times" <"$work/$name-$times.sql"
}

declare -A per_transaction
for name in claim insert apply_plpgsql apply_sql apply_sql_atomic statement; do
    many=$(instructions "$name" "$calls")
    few=$(instructions "$name" "$warm")
    per_transaction[$name]=$(((many - few) / (calls - warm)))
    printf '%-17s %7d instructions per transaction\n' "$name" "${per_transaction[$name]}"
done
for pair in claim/insert apply_plpgsql/statement apply_sql/statement apply_sql_atomic/statement; do
    printf '%-27s %s times the instructions\n' "$pair" \
        "$(ratio "${per_transaction[${pair%/*}]}" "${per_transaction[${pair#*/}]}")"
done

# Inclusive instructions per claim of the routines that make up its work.
echo "inside a claim (inclusive, per transaction):"
callgrind_annotate --inclusive=yes --threshold=100 "$work/claim-$calls.out" 2>/dev/null |
    awk -v n="$calls" '
        /[:](inbox_claim|standard_ExecutorStart|standard_ExecutorEnd|ExecOpenIndices|ExecCloseIndices|ExecInsertIndexTuples|ExecCheckIndexConstraints|heap_insert|SPI_execute_plan) \[/ {
            gsub(",", "", $1); name = $(NF - 1); sub(/^.*:/, "", name)
            printf "  %-28s %7d\n", name, $1 / n
        }'
