#!/usr/bin/env bash
# The examples suite: each consumer of examples/ (Python, Node, C++) runs as two instances at
# once, fed the same at-least-once stream by its receive_batch() stub, against a fresh database
# of the cluster that PGHOST/PGUSER name. Every distinct payment must be applied exactly once.
#   test/examples/run.sh WORKDIR [python|node|cpp ...]
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
shift
examples=("$@")
((${#examples[@]})) || examples=(python node cpp)
mkdir -p "$work"

# What every stub delivers: payments 1 to 120 (payment i: account acct-<i % 5>, amount
# (i * 37) % 1000 + 1), 17 of them twice in their batch, and 11 batches opening with a redelivery.
payments=120
deliveries=$((120 + 17 + 11))

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
    sql -d "$db" -c 'CREATE EXTENSION inbox' \
        -c 'CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL)'

    # Two instances at once, as when a broker hands the same messages to a second instance.
    PGDATABASE=$db $command >"$work/$example.1.out" 2>&1 &
    local first=$!
    PGDATABASE=$db $command >"$work/$example.2.out" 2>&1 &
    local second=$!
    wait "$first" || { echo "$example: instance 1 failed:"; cat "$work/$example.1.out"; failures=1; }
    wait "$second" || { echo "$example: instance 2 failed:"; cat "$work/$example.2.out"; failures=1; }
    ((failures == 0)) || return 1

    local processed=0 out p s
    for out in "$work/$example".{1,2}.out; do
        p=$(sed -n 's/.*processed=\([0-9]*\).*/\1/p' "$out")
        s=$(sed -n 's/.*skipped=\([0-9]*\).*/\1/p' "$out")
        echo "$example: $(cat "$out")"
        if [ -z "$p" ] || [ -z "$s" ] || ((p + s != deliveries)); then
            echo "$example: expected $deliveries deliveries, processed + skipped, in: $(cat "$out")"
            failures=1
        else
            processed=$((processed + p))
        fi
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
    return $failures
}

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
