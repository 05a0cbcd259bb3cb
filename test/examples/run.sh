#!/usr/bin/env bash
# The examples suite: each consumer of examples/ (Python, Node, C++) runs as two instances at
# once, fed the same at-least-once stream by its broker stub, against a fresh database (with
# examples/schema.sql) of the cluster that PGHOST/PGUSER name, as the role $consumer_role, an
# ordinary role that schema.sql makes the owner of the consumer. Every distinct payment must be
# applied exactly once, and the malformed one dead-lettered by each instance.
#   test/examples/run.sh WORKDIR [python|node|cpp ...]
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
shift
examples=("$@")
((${#examples[@]})) || examples=(python node cpp)
mkdir -p "$work"

# What every stub delivers: payments 1 to 120 (payment i: account acct-<i % 5>, amount
# (i * 37) % 1000 + 1), some of them more than once, and one malformed payment whose handler
# fails until the consumer's max_attempts (examples/schema.sql) make it poisoned.
payments=120
malformed=pay-malformed
max_attempts=3
consumer_role=inbox_examples_app

# The command that runs one instance of an example, after building it into $work/LANGUAGE.
prepare_python() { echo "/usr/bin/python3 $source_dir/examples/python/consumer.py"; }
prepare_node() {
    local dir=$work/node
    mkdir -p "$dir"
    cp "$source_dir"/examples/node/{package.json,package-lock.json,consumer.js} "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) || { cat "$dir/npm.log" >&2; return 1; }
    echo "node $dir/consumer.js"
}
prepare_cpp() {
    local dir=$work/cpp
    mkdir -p "$dir"
    cp "$source_dir"/examples/cpp/{Makefile,consumer.cpp} "$dir/"
    make -s -C "$dir" >&2
    echo "$dir/consumer"
}

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }

check_example() {
    local example=$1 command db=inbox_examples_$1 failures=0
    command=$("prepare_$example") || { echo "$example: could not be built"; return 1; }
    sql -d postgres -c "CREATE DATABASE $db"
    sql -d "$db" -v consumer_role="$consumer_role" -f "$source_dir/examples/schema.sql" >/dev/null

    # Two instances at once, as when a broker hands the same messages to a second instance.
    PGDATABASE=$db PGUSER=$consumer_role $command >"$work/$example.1.out" 2>&1 &
    local first=$!
    PGDATABASE=$db PGUSER=$consumer_role $command >"$work/$example.2.out" 2>&1 &
    local second=$!
    wait "$first" || { echo "$example: instance 1 failed:"; cat "$work/$example.1.out"; failures=1; }
    wait "$second" || { echo "$example: instance 2 failed:"; cat "$work/$example.2.out"; failures=1; }
    ((failures == 0)) || return 1

    # Each instance: every delivery acked, nacked or dead-lettered, the malformed payment
    # dead-lettered once.
    local processed=0 out count outcome
    local -A counts
    for out in "$work/$example".{1,2}.out; do
        echo "$example: $(cat "$out")"
        for outcome in delivered processed duplicate failed poisoned; do
            count=$(sed -n "s/.*\b$outcome=\([0-9]*\).*/\1/p" "$out")
            counts[$outcome]=${count:--1}
        done
        if ((counts[processed] + counts[duplicate] + counts[failed] + counts[poisoned] != counts[delivered])); then
            echo "$example: the outcomes do not add up to the deliveries in: $(cat "$out")"
            failures=1
        fi
        if ((counts[poisoned] != 1)); then
            echo "$example: expected the malformed payment dead-lettered once, in: $(cat "$out")"
            failures=1
        fi
        processed=$((processed + counts[processed]))
    done
    if ((processed != payments)); then
        echo "$example: the instances processed $processed payments together, expected $payments"
        failures=1
    fi

    local wrong applied markers
    wrong=$(sql -d "$db" -c "
        SELECT coalesce(a.id, e.id) || ': ' || coalesce(a.balance::text, 'none') || ' instead of ' || coalesce(e.balance::text, 'none')
        FROM accounts AS a
        FULL JOIN (SELECT 'acct-' || i % 5 AS id, sum((i * 37) % 1000 + 1) AS balance
                   FROM generate_series(1, $payments) AS i GROUP BY 1) AS e USING (id)
        WHERE a.balance IS DISTINCT FROM e.balance")
    if [ -n "$wrong" ]; then
        echo "$example: balances differ from the distinct payments:"
        echo "$wrong"
        failures=1
    fi
    applied=$(sql -d "$db" -c "SELECT applied FROM inbox.stats WHERE consumer = 'payments'")
    markers=$(sql -d "$db" -c "SELECT count(*) FROM inbox.messages WHERE consumer = 'payments'")
    if [ "$applied" != "$payments" ] || [ "$markers" != "$payments" ]; then
        echo "$example: inbox.stats applied = $applied, markers = $markers, expected $payments"
        failures=1
    fi
    # The malformed payment: no marker, its failures kept by inbox.attempts (at least
    # max_attempts: the two instances may fail it side by side), and both instances told
    # "poisoned" (inbox.stats counts each answer).
    local dead_letter
    dead_letter=$(sql -d "$db" -c "
        SELECT (SELECT count(*) FROM inbox.messages WHERE consumer = 'payments' AND message_id = '$malformed')
               || ' ' || coalesce((SELECT failures || ' ' || last_sqlstate FROM inbox.attempts
                                   WHERE consumer = 'payments' AND message_id = '$malformed'), 'none')
               || ' ' || (SELECT poisoned FROM inbox.stats WHERE consumer = 'payments')")
    read -r dl_markers dl_failures dl_sqlstate dl_poisoned <<<"$dead_letter"
    if [ "$dl_markers" != 0 ] || ! [[ $dl_failures =~ ^[0-9]+$ ]] || ((dl_failures < max_attempts)) ||
        [ "$dl_sqlstate" != 22P02 ] || [ "$dl_poisoned" != 2 ]; then
        echo "$example: $malformed: markers, failures, last SQLSTATE, poisoned answers = $dead_letter;" \
            "expected 0, at least $max_attempts, 22P02, 2"
        failures=1
    fi
    return $failures
}

sql -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = '$consumer_role'" | grep -q . ||
    sql -d postgres -c "CREATE ROLE $consumer_role LOGIN"
failed=0
for example in "${examples[@]}"; do
    if check_example "$example"; then
        echo "example $example: ok"
    else
        echo "example $example: FAILED"
        failed=1
    fi
done
exit $failed
