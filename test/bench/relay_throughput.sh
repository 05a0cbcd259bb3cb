#!/usr/bin/env bash
# inbox-relay's throughput to RabbitMQ with publisher confirms, against (a) a hand-written relay
# over a hand-written outbox table (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n, publish, confirms,
# DELETE; test/bench/relay_baselines.cpp, the same language and libraries), and (b) the broker's
# own limit: the same messages published in the same batches with confirms, reading nothing.
# inbox-relay runs twice: with the default inbox.outbox_retention (7d: relay_done marks each
# message delivered, kept for the purge) and with 0 (relay_done deletes, as the hand-written relay
# does). Each round fills the outboxes with N messages (no key, a small jsonb payload), then runs
# the four in turn (interleaved rounds, each starting with the next side); the rate is N over the time from the relay's start to its
# last message confirmed and settled. Batches of B for all. Prints each round and the median
# ratios of the inbox-relay runs to the hand-written relay and to the broker limit (with how many
# rounds reached the target: a median of a few rounds moves by a tenth here); then where
# each side's CPU went (milliseconds per 1,000 messages in the client, PostgreSQL and RabbitMQ,
# medians; PostgreSQL's beside the broker limit is its background work): on two shared cores the
# three compete, so CPU per message bounds the rate. With KEPT, a fifth side: inbox-relay with
# retention 7d over an outbox that keeps KEPT records of messages delivered earlier, as the
# default retention keeps a week of them (the other side with 7d starts each round from an
# empty table, as after the installation; from 75,000 records or so the primary key has a level
# between its root and its leaves, where the insertion of an id at its right end no longer
# descends from the root).
#   test/bench/relay_throughput.sh [N=20000] [rounds=3] [B=500] [KEPT=0]
set -euo pipefail
messages=${1:-20000}
rounds=${2:-3}
batch=${3:-500}
kept=${4:-0}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
# libpq's headers, from the system's pg_config (the private copy's has none).
pg_includedir=$(pg_config --includedir)
private_cluster_start "synchronous_commit = off" "inbox.purge_worker = off"
trap 'rabbitmq_stop; cluster_stop; rm -rf "$work"' EXIT
# Erlang's schedulers spin a while before they sleep (its +sbwt flags): on two cores shared with
# PostgreSQL and the relays, that spinning takes a core they need. Off here, for the same broker
# of every side.
rabbitmq_erl_args="+sbwt none +sbwtdcpu none +sbwtdio none"
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
rabbitmq_purge_sink bench >/dev/null

# CPU clock ticks used by a process and its descendants so far, those that exited included (the
# children a process waited for count in its own cutime and cstime).
tree_ticks() {
    local pid=$1 total child
    total=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
    for child in $(pgrep -P "$pid"); do
        total=$((total + $(tree_ticks "$child")))
    done
    echo "$total"
}
ticks_per_second=$(getconf CLK_TCK)
postmaster_pid=$(head -1 "$cluster_dir/data/postmaster.pid")
# Runs a side's command with the database's and the broker's CPU counted around it; prints its
# rate, then its client's, PostgreSQL's and RabbitMQ's CPU in milliseconds per 1,000 messages.
# The client runs under a shell of its own, whose cutime and cstime are the client's alone.
measured() {
    local pg_before rabbit_before client rate
    pg_before=$(tree_ticks "$postmaster_pid")
    rabbit_before=$(tree_ticks "$rabbitmq_server_pid")
    rate=$("$@" 3>"$work/client.ticks")
    client=$(cat "$work/client.ticks")
    echo "$rate" \
        "$(per_thousand "$client")" \
        "$(per_thousand $(($(tree_ticks "$postmaster_pid") - pg_before)))" \
        "$(per_thousand $(($(tree_ticks "$rabbitmq_server_pid") - rabbit_before)))"
}
per_thousand() {
    awk -v t="$1" -v hz="$ticks_per_second" -v n="$messages" 'BEGIN { printf "%.1f", t * 1000 / hz * 1000 / n }'
}
# Runs a command under a shell that writes to fd 3 the CPU ticks the command used.
client_ticks() {
    bash -c '"$@"; status=$?; read -r -a stat </proc/$$/stat; echo $((stat[15] + stat[16])) >&3; exit $status' \
        client "$@"
}

# Each side fills its outbox first (outside the measurement), then runs; a run prints its rate in
# messages per second. The relay's progress is read from its own lines, not by querying the
# database, which would count in its CPU and slow it.
fill_inbox_outbox() {
    cluster_psql -c "TRUNCATE inbox.outbox_messages, inbox.outbox_delivered" \
        -c "SELECT count(inbox.send('bench', '$payload')) FROM generate_series(1, $messages)" \
        >/dev/null
}

# The relay's lines, each after the time it was printed (a batch's line follows its relay_done).
timestamped() { while IFS= read -r line; do echo "$EPOCHREALTIME $line"; done; }
published_by_relay() {
    awk '$2 == "published" { n += $3 } END { print n + 0 }' "$work/relay.log"
}

# Its rate from the time of the last batch settled, not of the relay's exit. RETENTION: the
# session's inbox.outbox_retention.
run_inbox_relay() {
    local retention=$1 started pid
    : >"$work/relay.log"  # not the last run's lines, before the background job truncates it
    started=$(now_s)
    client_ticks "$relay" --db "$conninfo options='-c inbox.outbox_retention=$retention'" \
        --amqp "amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/" --batch "$batch" \
        --name "bench-$$" 2>&1 | timestamped >"$work/relay.log" &
    pid=$!
    until [ "$(published_by_relay)" -ge "$messages" ]; do sleep 0.05; done
    pkill -TERM -f -- "^$relay .*--name bench-$$"
    wait "$pid"
    awk -v n="$messages" -v s="$started" '$2 == "published" { t = $1 }
        END { printf "%d\n", n / (t - s) }' "$work/relay.log"
}

fill_hand_outbox() {
    cluster_psql -c "TRUNCATE bench_outbox" -c "INSERT INTO bench_outbox (payload)
                     SELECT '$payload' FROM generate_series(1, $messages)" >/dev/null
}

run_hand_relay() {
    local started
    started=$(now_s)
    client_ticks "$baselines" hand-relay "$conninfo" "$rabbitmq_amqp_port" bench "$batch"
    awk -v n="$messages" -v t="$(now_s)" -v s="$started" 'BEGIN { printf "%d\n", n / (t - s) }'
}

run_broker_limit() {
    local started
    started=$(now_s)
    client_ticks "$baselines" broker-limit "$rabbitmq_amqp_port" bench "$batch" "$messages" \
        "$payload"
    awk -v n="$messages" -v t="$(now_s)" -v s="$started" 'BEGIN { printf "%d\n", n / (t - s) }'
}

echo "PostgreSQL $(sql postgres 'SHOW server_version')," \
    "RabbitMQ $(rabbitmq_ctl version 2>/dev/null || echo '?'):" \
    "$messages messages, batches of $batch, $rounds rounds"
# The Nth value of a space-separated list, the last without N; the median of a column of them.
last_of() { local values=($1); echo "${values[-1]}"; }
nth_of() { local values=($1); echo "${values[$2]}"; }
column_median() { tr ' ' '\n' <<<"$1" | grep . | cut -d, -f"$2" | median; }
sides=(keeping deleting hand broker)
declare -A label=([keeping]="inbox-relay, retention 7d" [deleting]="inbox-relay, retention 0"
                  [hand]="hand-written relay" [broker]="broker limit"
                  [kept]="inbox-relay, retention 7d, $kept kept")
inbox_sides=(keeping deleting)
if [ "$kept" -gt 0 ]; then sides+=(kept) inbox_sides+=(kept); fi
declare -A rates cpu
# One side's run over its own filled outbox, its rate and CPU appended to the side's lists.
run_side() {
    local side=$1 rate client pg rabbit published
    case $side in
        keeping) fill_inbox_outbox; read -r rate client pg rabbit <<<"$(measured run_inbox_relay 7d)" ;;
        kept) fill_inbox_outbox
              cluster_psql -v kept="$kept" -f "$source_dir/test/bench/kept_records.sql" >/dev/null
              read -r rate client pg rabbit <<<"$(measured run_inbox_relay 7d)" ;;
        deleting) fill_inbox_outbox; read -r rate client pg rabbit <<<"$(measured run_inbox_relay 0)" ;;
        hand) fill_hand_outbox; read -r rate client pg rabbit <<<"$(measured run_hand_relay)" ;;
        broker) read -r rate client pg rabbit <<<"$(measured run_broker_limit)" ;;
    esac
    rates[$side]+="$rate " cpu[$side]+="$client,$pg,$rabbit "
    published=$(rabbitmq_purge_sink bench)
    [ "$published" = "$messages" ] ||
        { echo "round $round: ${label[$side]} published $published, not $messages"; exit 1; }
}
# Each round starts with the next side (round 1 with the first): in a fixed order, the side that
# ran first in every round ran slower (retention 0 first: 1.004 of the hand-written relay over 15
# rounds of 20,000; second: 1.065).
for round in $(seq "$rounds"); do
    for ((turn = 0; turn < ${#sides[@]}; turn++)); do
        run_side "${sides[(round - 1 + turn) % ${#sides[@]}]}"
    done
    line="round $round:"
    for side in "${sides[@]}"; do
        line+=" ${label[$side]} $(last_of "${rates[$side]}")/s,"
    done
    echo "${line%,}"
done
for side in "${inbox_sides[@]}"; do
    for baseline in hand broker; do
        target=$([ "$baseline" = hand ] && echo 1.0 || echo 0.8)
        ratios=$(for ((r = 0; r < rounds; r++)); do
            ratio "$(nth_of "${rates[$side]}" "$r")" "$(nth_of "${rates[$baseline]}" "$r")"
            echo
        done)
        echo "median ${label[$side]} / ${label[$baseline]}: $(median <<<"$ratios")" \
            "(target >= $target; $(awk -v t="$target" '$1 >= t { n++ } END { print n + 0 }' \
            <<<"$ratios") of $rounds rounds at or above it)"
    done
done
echo "CPU ms per 1,000 messages (client, PostgreSQL, RabbitMQ; medians):"
for side in "${sides[@]}"; do
    printf '  %-26s %s, %s, %s\n' "${label[$side]}" "$(column_median "${cpu[$side]}" 1)" \
        "$(column_median "${cpu[$side]}" 2)" "$(column_median "${cpu[$side]}" 3)"
done
