#!/usr/bin/env bash
# The hot path against the SQL a user would write without the extension, same cluster,
# interleaved transaction by transaction (pgbench_compare.sh), one message per transaction:
#   claim / insert     SELECT inbox.claim(consumer, id) against the bare
#                      INSERT ... ON CONFLICT DO NOTHING into a two-column text table with only
#                      its primary key (consumer, message_id);
#   apply / statement  SELECT inbox.apply(consumer, id, handler, message) against the same
#                      logic as one statement: the insert into that table and, only when it
#                      inserted, the handler's UPDATE, reading the same jsonb message. Three
#                      times: with the handler written in PL/pgSQL, in SQL (LANGUAGE sql, whose
#                      body PostgreSQL before 18 parses and plans again in every transaction that
#                      calls it; 18 keeps its plan), and in SQL with a standard body (BEGIN
#                      ATOMIC, parsed once when the function is created, planned as the other).
# Message ids are random UUIDs, as most brokers make them. synchronous_commit = off: commits do
# not wait for the disk, so the comparison is of CPU, where the difference is largest.
#   test/bench/claim_apply_vs_sql.sh [seconds-per-round=10] [rounds=7] [clients=1]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-7}
clients=${3:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "synchronous_commit = off" \
    "inbox.purge_worker = off"

cluster_psql -f "$source_dir/test/bench/hot_path_setup.sql" >/dev/null

pgbench_script claim <<'SQL'
SELECT inbox.claim('bench-claim', gen_random_uuid()::text);
SQL
pgbench_script insert <<'SQL'
INSERT INTO hand_markers VALUES ('bench-insert', gen_random_uuid()::text) ON CONFLICT DO NOTHING;
SQL
for language in plpgsql sql sql_atomic; do
    pgbench_script "apply_$language" <<SQL
\\set account random(1, 1000)
SELECT inbox.apply('bench-apply', gen_random_uuid()::text, 'credit_$language(jsonb)',
                   jsonb_build_object('account', :account::int, 'amount', 7));
SQL
done
pgbench_script statement <<'SQL'
\set account random(1, 1000)
WITH message AS (SELECT jsonb_build_object('account', :account::int, 'amount', 7) AS payload),
     claimed AS (INSERT INTO hand_markers VALUES ('bench-statement', gen_random_uuid()::text)
                 ON CONFLICT DO NOTHING RETURNING true)
UPDATE accounts SET balance = balance + (m.payload ->> 'amount')::bigint
FROM message m
WHERE id = (m.payload ->> 'account')::int AND EXISTS (SELECT FROM claimed);
SQL

echo "claim / bare INSERT ... ON CONFLICT DO NOTHING ($clients clients, ${seconds} s rounds)"
pgbench_compare claim insert
echo "apply with a PL/pgSQL handler / the same logic as one hand-written statement"
pgbench_compare apply_plpgsql statement
echo "apply with a SQL handler / the same logic as one hand-written statement"
pgbench_compare apply_sql statement
echo "apply with a SQL handler of a standard body (BEGIN ATOMIC) / the same statement"
pgbench_compare apply_sql_atomic statement
