# The statements of the hot path and the hand-written SQL they are compared with, on the tables
# and handlers of test/bench/hot_path_setup.sql, one message each (a new random UUID). Sourced by
# test/bench/hot_path_instructions.sh and test/bench/apply_handler_cpu.sh.
# shellcheck disable=SC2034
declare -A statement=(
    [claim]="SELECT inbox.claim('claim', gen_random_uuid()::text)"
    [insert]="INSERT INTO hand_markers VALUES ('insert', gen_random_uuid()::text) ON CONFLICT DO NOTHING"
    [apply_plpgsql]="SELECT inbox.apply('apply', gen_random_uuid()::text, 'credit_plpgsql(jsonb)', jsonb_build_object('account', 7, 'amount', 7))"
    [apply_sql]="SELECT inbox.apply('apply', gen_random_uuid()::text, 'credit_sql(jsonb)', jsonb_build_object('account', 7, 'amount', 7))"
    [apply_sql_atomic]="SELECT inbox.apply('apply', gen_random_uuid()::text, 'credit_sql_atomic(jsonb)', jsonb_build_object('account', 7, 'amount', 7))"
    [statement]="WITH message AS (SELECT jsonb_build_object('account', 7, 'amount', 7) AS payload), claimed AS (INSERT INTO hand_markers VALUES ('statement', gen_random_uuid()::text) ON CONFLICT DO NOTHING RETURNING true) UPDATE accounts SET balance = balance + (m.payload ->> 'amount')::bigint FROM message m WHERE id = (m.payload ->> 'account')::int AND EXISTS (SELECT FROM claimed)"
)
