#!/usr/bin/env bash
# Commit-to-publish latency of the outbox at a steady rate: a producer commits one transaction a
# message (one inbox.send, autocommit) on a schedule of RATE a second (each due at start + n /
# RATE: a late one does not push the next back; the rate achieved is printed); one inbox-relay
# publishes them to a private RabbitMQ node (publisher confirms, persistent, --batch 100); a
# consumer on a queue bound to the exchange takes the time each message arrives. Latency = arrival
# - the time the producer's COMMIT returned, matched by the message's sequence number, both taken
# with CLOCK_REALTIME on this machine (test/bench/relay_latency.cpp). The first WARMUP seconds of
# each run are dropped; p50, p90, p99, max and count are of the SECONDS after them.
# Two modes, in interleaved runs (listen, poll, listen, poll, ...), each in its own database:
#   listen  inbox-relay as shipped: woken by the NOTIFY of each commit (LISTEN inbox_outbox);
#   poll    the same relay, with inbox.send redefined in that database as the SQL edition's
#           inbox.send_message without its pg_notify:
#           no notification ever comes, so the relay only looks at the outbox every --poll
#           POLL seconds (after an empty take), which is what a relay without LISTEN does.
# The cluster runs with synchronous_commit = off (the producer's commits do not wait for the
# disk: the rate is the relay's to keep, not the fsync's), the purge worker off.
#   test/bench/relay_latency.sh [SECONDS=30] [RATE=1000] [WARMUP=5] [ROUNDS=2] [POLL=1]
set -euo pipefail
seconds=${1:-30}
rate=${2:-1000}
warmup=${3:-5}
rounds=${4:-2}
poll=${5:-1}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
# libpq's headers, from the system's pg_config (the private copy's has none).
pg_includedir=$(pg_config --includedir)
private_cluster_start "synchronous_commit = off" "inbox.purge_worker = off"
producer_pid=
relay_pid=
consumer_pid=
stop_running() {
    local pid
    for pid in $producer_pid $relay_pid $consumer_pid; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    producer_pid=
    relay_pid=
    consumer_pid=
}
trap 'stop_running; rabbitmq_stop; cluster_stop; rm -rf "$work"' EXIT
# Interrupted, at once: the EXIT trap stops what runs (the producer runs in the background, so
# that a signal is not held back until its schedule ends).
trap 'exit 130' INT
trap 'exit 143' TERM
rabbitmq_start "$work/rabbitmq" >/dev/null
relay=$private_bindir/inbox-relay
helper=$work/relay_latency
g++ -std=c++20 -O2 -isystem "$pg_includedir" -I "$source_dir/src" \
    "$source_dir/test/bench/relay_latency.cpp" -lpq -lrabbitmq -o "$helper"

cluster_psql -c "CREATE DATABASE listen" -c "CREATE DATABASE poll"
sql listen "CREATE EXTENSION inbox"
sql poll "CREATE EXTENSION inbox"
send_message="'inbox.send_message(text, jsonb, bytea, text, jsonb)'::regprocedure"
definition=$(sql poll "SELECT pg_get_functiondef($send_message)")
notify="PERFORM pg_notify('inbox_outbox', destination);"
grep -qF "$notify" <<<"$definition" || { echo "inbox.send_message has no '$notify'"; exit 1; }
grep -vF "$notify" <<<"$definition" | cluster_psql -d poll
[ "$(sql poll "SELECT prosrc LIKE '%pg_notify%' FROM pg_proc WHERE oid = $send_message")" = f ]
# The library's inbox.send notifies by itself (in C): in that database it becomes the SQL
# edition's, which calls inbox.send_message.
sql poll "CREATE OR REPLACE FUNCTION inbox.send(destination text, payload jsonb,
    key text DEFAULT NULL, headers jsonb DEFAULT NULL) RETURNS uuid
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS \$\$ SELECT inbox.send_message(destination, payload, NULL, key, headers) \$\$" >/dev/null

wait_for() {
    local what=$1 deadline=$((SECONDS + $2))
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || { echo "timed out waiting for $what"; exit 1; }
        sleep 0.05
    done
}
outbox_empty() { [ "$(sql "$1" "SELECT pending FROM inbox.outbox_stats")" = 0 ]; }

# One run: consumer, relay, then the producer for WARMUP + SECONDS; waits until the outbox is
# empty (every message confirmed) and the last ones had time to reach the consumer. Sets
# run_result: the producer's "sent rate late" and how long the relay took to empty the outbox
# after the producer stopped. In this shell, not a subshell: the trap must know the pids.
run_mode() {
    local db=$1 tag=$2 conninfo
    conninfo="host=$cluster_dir user=postgres dbname=$1"
    "$helper" consume "$rabbitmq_amqp_port" bench "$work/$tag.arrivals" &
    consumer_pid=$!
    wait_for "the consumer" 30 test -e "$work/$tag.arrivals.ready"
    "$relay" --db "$conninfo" --amqp "amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/" \
        --name "bench-$tag" --poll "$poll" >"$work/$tag.relay.log" 2>&1 &
    relay_pid=$!
    wait_for "the relay" 30 grep -qs '^connected to amqp' "$work/$tag.relay.log"
    "$helper" produce "$conninfo" bench "$rate" "$((warmup + seconds))" "$work/$tag.commits" \
        >"$work/$tag.produced" &
    producer_pid=$!
    wait "$producer_pid"
    producer_pid=
    local produced stopped
    produced=$(cat "$work/$tag.produced")
    stopped=$(now_s)
    wait_for "the relay to empty the outbox" 120 outbox_empty "$db"
    local drained
    drained=$(awk -v a="$(now_s)" -v b="$stopped" 'BEGIN { printf "%.2f", a - b }')
    sleep 0.5
    stop_running
    run_result="$produced $drained"
}

describe() {
    local count p50 p90 p99 max missing
    read -r count p50 p90 p99 max missing <<<"$2"
    printf '%-6s p50 %8s ms  p90 %8s ms  p99 %8s ms  max %8s ms  count %6s' \
        "$1" "$p50" "$p90" "$p99" "$max" "$count"
    ((missing == 0)) || printf '  MISSING %s' "$missing"
    echo
}

echo "PostgreSQL $(sql postgres 'SHOW server_version')," \
    "RabbitMQ $(rabbitmq_ctl version 2>/dev/null || echo '?'), $(nproc) cores" \
    "(load average $(cut -d ' ' -f 1-3 /proc/loadavg)):" \
    "$rate messages/s, ${warmup} s warm-up + ${seconds} s measured, $rounds rounds," \
    "relay --poll $poll"
declare -a listen_files poll_files
missing_any=0
for round in $(seq "$rounds"); do
    for mode in listen poll; do
        tag=$mode-$round
        run_mode "$mode" "$tag"
        read -r sent achieved late drained <<<"$run_result"
        result=$("$helper" report "$warmup" "$work/$tag.commits" "$work/$tag.arrivals")
        [ "$(awk '{ print $6 }' <<<"$result")" = 0 ] || missing_any=1
        echo "round $round: $(describe "$mode" "$result")"
        echo "         sent $sent at $achieved/s ($late started over 1/$rate s late)," \
            "outbox empty ${drained} s after the last commit"
        if [ "$mode" = listen ]; then
            listen_files+=("$work/$tag.commits" "$work/$tag.arrivals")
        else
            poll_files+=("$work/$tag.commits" "$work/$tag.arrivals")
        fi
    done
done
echo "all rounds:"
describe listen "$("$helper" report "$warmup" "${listen_files[@]}")"
describe poll "$("$helper" report "$warmup" "${poll_files[@]}")"
((missing_any == 0)) || { echo "some committed messages never arrived"; exit 1; }
