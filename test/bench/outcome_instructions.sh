#!/usr/bin/env bash
# Instructions (callgrind, in a single-user backend of this tree) of the outcome functions
# against what they replace: the same comparisons as test/bench/outcomes.sh, counted instead of
# timed, so that the machine's load does not enter into them.
#   receive       per call of inbox.receive without a payload vs inbox.claim (new ids, then the
#                 same ids again as duplicates): the functions themselves, everything they run;
#   statement     per execution of a prepared statement calling receive (both ways of reading
#                 its composite) or claim once, in a transaction of its own, as pgbench
#                 -M prepared runs them: execution and commit (PortalRun and the transaction);
#   claim_batch   per statement of 100 new ids vs the hand-written INSERT ... SELECT unnest(...)
#                 ON CONFLICT DO NOTHING RETURNING and vs 100 inbox.claim calls in one
#                 statement: the whole statement (parse, analysis, plan, execution and the
#                 commit of its transaction; exec_simple_query itself is static, so these are
#                 counted one by one).
#   test/bench/outcome_instructions.sh [calls] [batches] [executions]
set -euo pipefail
calls=${1:-20000}
batches=${2:-200}
executions=${3:-2000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
single_user_bench_start

# The statements given to single_user and callgrind_count end with ";" and an empty line (-j).
single_user -j "$work/setup" <<'SQL'
CREATE EXTENSION inbox;

CREATE TABLE processed (consumer text, message_id text, processed_at timestamptz NOT NULL DEFAULT now(),
                        PRIMARY KEY (consumer, message_id));

INSERT INTO processed (consumer, message_id) SELECT 'old', 'old-' || g FROM generate_series(1, 200000) g;

SELECT count(*) FROM inbox.claim_batch('old', ARRAY(SELECT 'old-' || g FROM generate_series(1, 200000) g));

SQL

per_call() {  # per_call FUNCTION SQL: instructions per call of FUNCTION
    local total
    total=$(printf '%s;\n\n' "$2" | callgrind_count -j "$work/$1" "$1")
    echo $((total / calls))
}

# $batches statements of 100 new ids each; the total of the statements, per statement.
per_batch() {  # per_batch SIDE TEMPLATE: TEMPLATE with IDS replaced by each batch's array
    local template=$2 batch total
    for batch in $(seq "$batches"); do
        local ids="ARRAY(SELECT '$1-$batch-' || g FROM pg_catalog.generate_series(1, 100) g)"
        printf '%s;\n\n' "${template//IDS/$ids}"
    done >"$work/$1.sql"
    total=$(callgrind_count -j "$work/$1" pg_parse_query pg_analyze_and_rewrite_fixedparams \
        pg_plan_queries PortalRun StartTransactionCommand CommitTransactionCommand <"$work/$1.sql")
    echo $((total / batches))
}

# $executions executions of a prepared statement taking a new id; instructions per execution.
per_execution() {  # per_execution NAME STATEMENT ($1 in STATEMENT is the id)
    local execution total
    {
        printf 'PREPARE measured(text) AS %s;\n\n' "$2"
        for execution in $(seq "$executions"); do
            printf "EXECUTE measured('%s-%d');\n\n" "$1" "$execution"
        done
    } >"$work/$1.sql"
    total=$(callgrind_count -j "$work/$1" PortalRun StartTransactionCommand \
        CommitTransactionCommand <"$work/$1.sql")
    echo $((total / executions))
}

# Both tables start with 200,000 rows of another consumer, so that what each comparison adds
# (up to 40,000 rows) changes the depth of neither index.
batch=$(per_batch batch "SELECT count(*) FROM inbox.claim_batch('b', IDS)")
by_hand=$(per_batch hand "WITH claimed AS (INSERT INTO processed (consumer, message_id) SELECT 'h', id FROM unnest(IDS) AS id ON CONFLICT DO NOTHING RETURNING message_id) SELECT count(*) FROM claimed")
claims=$(per_batch claims "SELECT count(*) FROM unnest(IDS) AS id WHERE inbox.claim('claims', id)")
printf 'batch of 100 new ids: claim_batch %d instructions per statement, by hand %d, 100 claims %d\n' \
    "$batch" "$by_hand" "$claims"
printf '  speed ratio claim_batch / by hand %s, claim_batch / 100 claims %s (inverse instruction ratios)\n' \
    "$(ratio "$by_hand" "$batch")" "$(ratio "$claims" "$batch")"

receive_new=$(per_call inbox_receive "SELECT count(*) FROM generate_series(1, $calls) g WHERE (inbox.receive('r', 'm-' || g)).outcome = 'processed'")
claim_new=$(per_call inbox_claim "SELECT count(*) FROM generate_series(1, $calls) g WHERE inbox.claim('c', 'm-' || g)")
receive_duplicate=$(per_call inbox_receive "SELECT count(*) FROM generate_series(1, $calls) g WHERE (inbox.receive('r', 'm-' || g)).outcome = 'processed'")
claim_duplicate=$(per_call inbox_claim "SELECT count(*) FROM generate_series(1, $calls) g WHERE inbox.claim('c', 'm-' || g)")
printf 'receive  new id:    %8d instructions per call, claim %8d: receive / claim %s\n' \
    "$receive_new" "$claim_new" "$(ratio "$receive_new" "$claim_new")"
printf 'receive  duplicate: %8d instructions per call, claim %8d: receive / claim %s\n' \
    "$receive_duplicate" "$claim_duplicate" "$(ratio "$receive_duplicate" "$claim_duplicate")"

claim_statement=$(per_execution claim_statement 'SELECT inbox.claim($$c$$, $1)')
receive_from=$(per_execution receive_from 'SELECT outcome FROM inbox.receive($$r$$, $1)')
receive_field=$(per_execution receive_field 'SELECT (inbox.receive($$r$$, $1)).outcome')
printf 'per prepared statement: claim %d, receive %d (FROM), %d (field): receive / claim %s, %s\n' \
    "$claim_statement" "$receive_from" "$receive_field" \
    "$(ratio "$receive_from" "$claim_statement")" "$(ratio "$receive_field" "$claim_statement")"
