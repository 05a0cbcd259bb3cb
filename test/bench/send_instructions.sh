#!/usr/bin/env bash
# Where the CPU of a send goes, against the same message written by hand into an outbox table of the
# application's (send_vs_insert.sh's two statements and table): instructions per transaction (one
# prepared statement, executed and committed N times) counted as callgrind.sh's
# instructions_per_transaction counts them (a single-user backend: figures that do not depend on the
# machine's load). Then, per transaction, the inclusive instructions of the routines each one's work
# is made of (the call, the executor's insert, the index entries, the partial indexes' predicates,
# opening and closing the indexes, the lock of the key, the sequence, the notification at commit).
#   test/bench/send_instructions.sh [N=3000]
set -euo pipefail
calls=${1:-3000}
warm=200

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
single_user_bench_start "synchronous_commit = off"
single_user -j "$work/setup" <<'SQL'
CREATE EXTENSION inbox;

CREATE TABLE app_outbox (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                         created_at timestamptz NOT NULL DEFAULT now(),
                         destination text NOT NULL, key text, headers jsonb, payload jsonb);

SQL

payload="jsonb_build_object('order', 7, 'status', 'paid')"
declare -A statement=(
    [send]="SELECT inbox.send('orders', $payload, 'k-7')"
    [insert]="INSERT INTO app_outbox (destination, key, payload) VALUES ('orders', 'k-7', $payload)"
)

# The statements of TIMES transactions of statement $1 (a line each).
statement_lines() {
    echo "PREPARE s AS ${statement[$1]};"
    yes 'EXECUTE s;' | head -n "$2"
}

# Each one's instructions per transaction, their ratio, and what these routines take in each.
routines=exec_execute_message,PortalRun,inbox_send,ExecInsert,heap_insert,ExecInsertIndexTuples
routines+=,ExecConstraints,SPI_connect,SPI_execute_plan,SPI_finish,nextval_internal
routines+=,pg_advisory_xact_lock_int8,pg_strong_random,Async_Notify,PreCommit_Notify
routines+=,AtCommit_Notify,CommitTransaction,StartTransaction,standard_ExecutorStart
routines+=,standard_ExecutorEnd,index_insert,ExecPrepareQual,ExecOpenIndices,index_open,ExecCloseIndices
compare_instructions send insert "$calls" "$warm" "$routines"
