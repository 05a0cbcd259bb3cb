#!/usr/bin/env bash
# inbox-relay's throughput to RabbitMQ with publisher confirms, against (a) a hand-written relay
# over a hand-written outbox table (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n, publish, confirms,
# DELETE; test/bench/relay_baselines.cpp, the same language and libraries), and (b) the broker's
# own limit: the same messages published in the same batches with confirms, reading nothing.
# Each round fills both outboxes with N messages (no key, a small jsonb payload), then runs the
# three in turn (interleaved rounds); the rate is N over the time from the relay's start to its
# last message confirmed and settled. Batches of B for all three. Prints each round and the
# median ratios: inbox-relay / hand-written, inbox-relay / broker limit.
#   test/bench/relay_throughput.sh [N=20000] [rounds=3] [B=500]
set -euo pipefail
messages=${1:-20000}
rounds=${2:-3}
batch=${3:-500}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
# libpq's headers, from the system's pg_config (the private copy's has none).
pg_includedir=$(pg_config --includedir)
private_cluster_start "synchronous_commit = off" "inbox.purge_worker = off"
trap 'rabbitmq_stop; cluster_stop; rm -rf "$work"' EXIT
rabbitmq_start "$work/rabbitmq" >/dev/null
relay=$private_bindir/inbox-relay
baselines=$work/relay_baselines
g++ -std=c++20 -O2 -isystem "$pg_includedir" -I "$source_dir/src" \
    "$source_dir/test/bench/relay_baselines.cpp" -lpq -lrabbitmq -o "$baselines"

conninfo="host=$cluster_dir user=postgres dbname=postgres"
payload='{"type": "OrderPaid", "order": 41, "amount": 20, "note": "a message of about 100 bytes"}'
cluster_psql -c "CREATE EXTENSION inbox" \
    -c "CREATE TABLE bench_outbox (id bigserial PRIMARY KEY, payload jsonb NOT NULL)"
# A durable exchange and queue, purged after each run (its messages are not read).
amqp() {
    /usr/bin/python3 -c "
import pika, sys
with pika.BlockingConnection(pika.ConnectionParameters('127.0.0.1', $rabbitmq_amqp_port)) as c:
    ch = c.channel()
    ch.exchange_declare('bench', 'fanout', durable=True)
    ch.queue_declare('bench', durable=True)
    ch.queue_bind('bench', 'bench')
    print(ch.queue_purge('bench').method.message_count)"
}
amqp >/dev/null

# Each side prints its rate in messages per second.
run_inbox_relay() {
    cluster_psql -c "DELETE FROM inbox.outbox_messages" \
        -c "SELECT count(inbox.send('bench', '$payload')) FROM generate_series(1, $messages)" \
        >/dev/null
    local started
    started=$(now_s)
    "$relay" --db "$conninfo" --amqp "amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/" \
        --batch "$batch" --name bench >"$work/relay.log" 2>&1 &
    local pid=$!
    until [ "$(sql postgres "SELECT pending FROM inbox.outbox_stats")" = 0 ]; do sleep 0.05; done
    kill -TERM "$pid"
    wait "$pid"
    sql postgres "SELECT round($messages / (extract(epoch FROM max(delivered_at)) - $started))
                  FROM inbox.outbox_messages"
}

run_hand_relay() {
    cluster_psql -c "INSERT INTO bench_outbox (payload)
                     SELECT '$payload' FROM generate_series(1, $messages)" >/dev/null
    local started
    started=$(now_s)
    "$baselines" hand-relay "$conninfo" "$rabbitmq_amqp_port" bench "$batch"
    awk -v n="$messages" -v t="$(now_s)" -v s="$started" 'BEGIN { printf "%d\n", n / (t - s) }'
}

run_broker_limit() {
    local started
    started=$(now_s)
    "$baselines" broker-limit "$rabbitmq_amqp_port" bench "$batch" "$messages" "$payload"
    awk -v n="$messages" -v t="$(now_s)" -v s="$started" 'BEGIN { printf "%d\n", n / (t - s) }'
}

echo "PostgreSQL $(sql postgres 'SHOW server_version')," \
    "RabbitMQ $(rabbitmq_ctl version 2>/dev/null || echo '?'):" \
    "$messages messages, batches of $batch, $rounds rounds"
declare -a vs_hand vs_broker
for round in $(seq "$rounds"); do
    relay_rate=$(run_inbox_relay)
    published=$(amqp)
    hand_rate=$(run_hand_relay)
    hand_published=$(amqp)
    broker_rate=$(run_broker_limit)
    amqp >/dev/null
    [ "$published" = "$messages" ] && [ "$hand_published" = "$messages" ] ||
        { echo "round $round: the queue got $published and $hand_published, not $messages"
          exit 1; }
    vs_hand+=("$(ratio "$relay_rate" "$hand_rate")")
    vs_broker+=("$(ratio "$relay_rate" "$broker_rate")")
    echo "round $round: inbox-relay $relay_rate/s, hand-written $hand_rate/s, broker limit" \
        "$broker_rate/s: ratios ${vs_hand[-1]} and ${vs_broker[-1]}"
done
echo "median inbox-relay / hand-written relay: $(printf '%s\n' "${vs_hand[@]}" | median)" \
    "(target >= 1.0)"
echo "median inbox-relay / broker limit: $(printf '%s\n' "${vs_broker[@]}" | median)" \
    "(target >= 0.8)"
