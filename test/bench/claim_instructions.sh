#!/usr/bin/env bash
# Instructions per call of inbox.claim, inbox.apply and inbox.complete (everything they run:
# validation, SPI, the executor's insert, counting), this tree against another commit, counted by
# callgrind in a single-user backend. Instruction counts do not depend on the machine's load, so one
# run of each build is a fair comparison where throughput on a shared machine is not. The consumer
# claims once in the set-up: a single-user backend runs each statement as one transaction, and a
# consumer registered by the measured transaction itself would be looked up in the registry on every
# claim (it is cached once committed). Then claims in transactions of their own (a prepared
# statement executed again and again), of the registered consumer (known) and each of a new consumer
# (first): a single-user backend can start no worker, so 1.1, whose first claim has a worker
# register the consumer, registers it in the claiming transaction there, as it does when no worker
# slot is free.
#   test/bench/claim_instructions.sh BASE_REV [calls] [executions]
set -euo pipefail
base_rev=${1:?usage: claim_instructions.sh BASE_REV [calls] [executions]}
calls=${2:-20000}
executions=${3:-5000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
trap '[ -n "${KEEP:-}" ] || git -C "$source_dir" worktree remove --force "$work/base/tree" 2>/dev/null; rm -rf "$work"' EXIT

# Each side's single-user backend: $work/SIDE/bindir on $work/SIDE/data; the statements given
# to it end with ";" and an empty line (-j).
prepare_side() {
    local side=$1 tree=$2
    private_side "$side" "$tree"
    single_user_init "$work/$side/bindir" "$work/$side/data"
    single_user -j "$work/$side/setup" <<'SQL'
CREATE EXTENSION inbox;
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$ UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint WHERE id = (payload ->> 'account')::int $$;
SELECT inbox.claim('c', 'registered');
SQL
}

git -C "$source_dir" worktree add --detach "$work/base/tree" "$base_rev" >/dev/null 2>&1
prepare_side base "$work/base/tree"
prepare_side head "$source_dir"

# Statement $1 prepared and executed $executions times, a transaction each.
executed() {
    printf 'PREPARE measured AS %s;\n\n' "$1"
    printf 'EXECUTE measured;\n\n%.0s' $(seq "$executions")
}

for side in base head; do
    single_user_use "$work/$side/bindir" "$work/$side/data"
    claim=$(callgrind_count -j "$work/$side/inbox_claim" inbox_claim <<SQL
SELECT count(*) FILTER (WHERE inbox.claim('c', 'claim-' || g)) FROM generate_series(1, $calls) g;
SQL
    )
    duplicate=$(callgrind_count -j "$work/$side/inbox_claim" inbox_claim <<SQL
SELECT count(*) FILTER (WHERE inbox.claim('c', 'claim-' || g)) FROM generate_series(1, $calls) g;
SQL
    )
    # (1.3 reads a literal fn in inbox.handler_named, outside inbox_apply: both are counted)
    apply=$(callgrind_count -j "$work/$side/inbox_apply" inbox_apply inbox_handler_named <<SQL
SELECT count(*) FILTER (WHERE inbox.apply('c', 'apply-' || g, 'credit(jsonb)', jsonb_build_object('account', g % 1000 + 1, 'amount', 1))) FROM generate_series(1, $calls) g;
SQL
    )
    # a result stored on each marker claimed above (it locks its marker: 1.3)
    complete=$(callgrind_count -j "$work/$side/inbox_complete" inbox_complete <<SQL
SELECT count(*) FROM (SELECT inbox.complete('c', 'claim-' || g, '{"status": 201}') FROM generate_series(1, $calls) g) stored;
SQL
    )
    known=$(executed "SELECT inbox.claim('c', gen_random_uuid()::text)" |
        callgrind_count -j "$work/$side/known_claim" inbox_claim)
    first=$(executed "SELECT inbox.claim('new-' || gen_random_uuid()::text, 'first')" |
        callgrind_count -j "$work/$side/first_claim" inbox_claim)
    eval "${side}_claim=\$((claim / calls)) ${side}_duplicate=\$((duplicate / calls)) ${side}_apply=\$((apply / calls)) ${side}_complete=\$((complete / calls))"
    eval "${side}_known=\$((known / executions)) ${side}_first=\$((first / executions))"
done
for what in claim duplicate apply complete known first; do
    b=$(eval echo "\$base_$what"); h=$(eval echo "\$head_$what")
    printf '%-9s instructions per call: base %s, head %s, head / base %s\n' "$what" "$b" "$h" \
        "$(ratio "$h" "$b")"
done
