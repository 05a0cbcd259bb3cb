#!/usr/bin/env bash
# Where the CPU of a claimed position goes, against the guard written by hand into an offsets table
# of the application's (claim_position_vs_upsert.sh's two statements and table): instructions per
# transaction (one prepared statement, executed over 100 streams and committed N times, every claim
# moving its stream) counted as callgrind.sh's instructions_per_transaction counts them (a
# single-user backend: figures that do not depend on the machine's load). Then, per transaction, the
# inclusive instructions of the routines each one's work is made of.
#   test/bench/position_instructions.sh [N=3000]
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
single_user_bench_start "synchronous_commit = off"
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

# The statements of TIMES transactions of statement $1 (a line each), over streams 1 to 100 in
# turn.
statement_lines() {
    echo "PREPARE s(int) AS ${statement[$1]};"
    seq "$2" | awk '{print "EXECUTE s(" $1 % 100 + 1 ");"}'
}

# Each one's instructions per transaction, their ratio, and what these routines take in each.
routines=exec_simple_query,PortalRun,inbox_claim_position,ExecInsert,ExecOnConflictUpdate
routines+=,ExecUpdate,heap_update,heap_insert,ExecInsertIndexTuples,ExecCheckIndexConstraints
routines+=,SPI_connect,SPI_execute_plan,SPI_finish,find_consumer_to_act,count_claims
routines+=,CommitTransaction,StartTransaction,standard_ExecutorStart,standard_ExecutorEnd
routines+=,ExecOpenIndices,ExecCloseIndices,heap_lock_tuple,GetCachedPlan,pg_class_aclcheck
routines+=,table_tuple_lock,heapam_tuple_lock,index_getnext_slot,index_beginscan,index_endscan
compare_instructions claim_position hand_guard "$calls" "$warm" "$routines"
