#!/usr/bin/env bash
# Throughput of inbox.apply against the same logic written by hand in PL/pgSQL (insert the marker
# with ON CONFLICT DO NOTHING, call the handler when it was new), and of inbox.claim against the
# bare INSERT ... ON CONFLICT statement. Same cluster, same handler, interleaved transaction by
# transaction (pgbench_compare.sh) so that machine noise hits both sides alike; prints each round
# and the median ratio.
#   test/bench/apply_vs_plpgsql.sh [seconds-per-run] [rounds] [clients]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-5}
clients=${3:-2}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
private_cluster_start "shared_buffers = '1GB'" "max_wal_size = '4GB'" "synchronous_commit = off"

cluster_psql <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int
$$;
CREATE FUNCTION apply_by_hand(p_consumer text, p_message_id text, payload jsonb)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO inbox.messages (consumer, message_id) VALUES (p_consumer, p_message_id)
    ON CONFLICT (consumer, message_id) DO NOTHING;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM credit(payload);
    RETURN true;
END $$;
SQL

# One message per transaction; ids drawn from a large space so that most are new and a few are
# duplicates, as in live traffic.
pgbench_script apply <<'SQL'
\set id random(1, 50000000)
\set account random(1, 1000)
SELECT inbox.apply('bench-apply', 'm-' || :id, 'credit(jsonb)', jsonb_build_object('account', :account::int, 'amount', 7));
SQL
pgbench_script by_hand <<'SQL'
\set id random(1, 50000000)
\set account random(1, 1000)
SELECT apply_by_hand('bench-hand', 'm-' || :id, jsonb_build_object('account', :account::int, 'amount', 7));
SQL
pgbench_script claim <<'SQL'
\set id random(1, 50000000)
SELECT inbox.claim('bench-claim', 'm-' || :id);
SQL
pgbench_script insert <<'SQL'
\set id random(1, 50000000)
INSERT INTO inbox.messages (consumer, message_id) VALUES ('bench-insert', 'm-' || :id)
ON CONFLICT (consumer, message_id) DO NOTHING;
SQL

echo "pgbench: apply vs hand-written PL/pgSQL ($clients clients, ${seconds}s runs, $rounds rounds)"
pgbench_compare apply by_hand
echo "pgbench: claim vs bare INSERT ... ON CONFLICT DO NOTHING"
pgbench_compare claim insert

# Per-call cost without client round trips or commits: one statement delivers 50,000 new
# messages, so only the function's own work differs. Timed by the server, rounds interleaved.
statement_ms() {
    cluster_psql -A -t -c "\\timing on" -c "$1" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}
echo "one statement, 50,000 messages: apply vs hand-written PL/pgSQL (ms, lower is better)"
ratios=()
for round in $(seq "$rounds"); do
    ours=$(statement_ms "SELECT count(*) FILTER (WHERE inbox.apply('loop-apply-$round', 'm-' || g,
        'credit(jsonb)', jsonb_build_object('account', g % 1000 + 1, 'amount', 7)))
        FROM generate_series(1, 50000) g")
    theirs=$(statement_ms "SELECT count(*) FILTER (WHERE apply_by_hand('loop-hand-$round', 'm-' || g,
        jsonb_build_object('account', g % 1000 + 1, 'amount', 7)))
        FROM generate_series(1, 50000) g")
    ratios+=("$(awk -v a="$ours" -v b="$theirs" 'BEGIN {printf "%.6f", b / a}')")
    printf '  round %d: apply %8.0f ms  by_hand %8.0f ms  speed ratio %.3f\n' "$round" "$ours" "$theirs" "${ratios[-1]}"
done
printf '%s\n' "${ratios[@]}" | median_ratio "speed apply / by_hand"

