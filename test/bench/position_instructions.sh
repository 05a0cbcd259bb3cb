#!/usr/bin/env bash
# Where the CPU of a claimed position goes, against the guard written by hand into an offsets
# table of the application's (claim_position_vs_upsert.sh's two statements and table):
# instructions per transaction (one prepared statement, executed over 100 streams and committed N
# times, every claim moving its stream) counted by callgrind in a single-user backend, so that the
# figures do not depend on the machine's load. Each statement runs twice, N and 200 times, and the
# difference is divided by N - 200, which leaves out the backend's start and the first executions.
# Then, per transaction, the inclusive instructions of the routines each one's work is made of.
#   test/bench/position_instructions.sh [N=3000]
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
trap 'rm -rf "$work"' EXIT
private_build
single_user_init "$private_bindir" "$work/data" "synchronous_commit = off"
single_user -j "$work/setup" <<'SQL'
CREATE EXTENSION inbox;

CREATE TABLE app_offsets (consumer text, stream text, position bigint NOT NULL,
                          PRIMARY KEY (consumer, stream));

SQL

now_us='(extract(epoch FROM clock_timestamp()) * 1000000)::bigint'
declare -A statement=(
    [claim_position]="SELECT inbox.claim_position('totals', 'orders/' || \$1, $now_us)"
    [hand_guard]="INSERT INTO app_offsets AS o (consumer, stream, position) VALUES ('totals', 'orders/' || \$1, $now_us) ON CONFLICT (consumer, stream) DO UPDATE SET position = excluded.position WHERE o.position < excluded.position"
)

# Instructions of a single-user backend executing statement $1 $2 times (a line each: a
# transaction each), over streams 1 to 100 in turn; the profile is kept in $work/$1-$2.out.
instructions() {
    local name=$1 times=$2
    { echo "PREPARE s(int) AS ${statement[$name]};"; seq "$times" | awk '{print "EXECUTE s(" $1 % 100 + 1 ");"}'; } \
        >"$work/$name-$times.sql"
    chmod 644 "$work/$name-$times.sql"
    callgrind_count "$work/$name-$times" <"$work/$name-$times.sql"
}

declare -A per_transaction
for name in claim_position hand_guard; do
    many=$(instructions "$name" "$calls")
    few=$(instructions "$name" "$warm")
    per_transaction[$name]=$(((many - few) / (calls - warm)))
    printf '%-15s %7d instructions per transaction\n' "$name" "${per_transaction[$name]}"
done
printf 'claim_position / hand_guard: %s times the instructions\n' \
    "$(ratio "${per_transaction[claim_position]}" "${per_transaction[hand_guard]}")"

# Inclusive instructions per transaction of the routines that make up each one's work.
routines=exec_simple_query,PortalRun,inbox_claim_position,ExecInsert,ExecOnConflictUpdate
routines+=,ExecUpdate,heap_update,heap_insert,ExecInsertIndexTuples,ExecCheckIndexConstraints
routines+=,SPI_connect,SPI_execute_plan,SPI_finish,find_consumer_to_act,count_claims
routines+=,CommitTransaction,StartTransaction,standard_ExecutorStart,standard_ExecutorEnd
routines+=,ExecOpenIndices,ExecCloseIndices,heap_lock_tuple,GetCachedPlan,pg_class_aclcheck
routines+=,table_tuple_lock,heapam_tuple_lock,index_getnext_slot,index_beginscan,index_endscan
for name in claim_position hand_guard; do
    echo "inside a transaction of $name (inclusive, per transaction):"
    callgrind_annotate --inclusive=yes --threshold=100 "$work/$name-$calls.out" 2>/dev/null |
        awk -v n="$calls" -v routines="${routines//,/|}" '
            $0 ~ "[:](" routines ") \\[" {
                gsub(",", "", $1); name = $(NF - 1); sub(/^.*:/, "", name)
                printf "  %-28s %7d\n", name, $1 / n
            }'
done
