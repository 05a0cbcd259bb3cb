#!/usr/bin/env bash
# inbox against pg-transactional-outbox 0.5.7 (npm: a Node library for a transactional outbox and
# inbox on PostgreSQL), on one PostgreSQL cluster, one private RabbitMQ node, one machine, with
# the same messages (about 100 bytes of JSON) and the same Node driver for both sides
# (test/bench/pg_transactional_outbox/, installed with npm into the temporary work directory).
#   1. outbox throughput: 4 connections commit N messages, one a transaction (BEGIN; store;
#      COMMIT), while the relay runs; the rate is the messages that arrived at a consumer of the
#      queue bound to exchange "bench" over the time from the first COMMIT to the last arrival:
#        ours:   SELECT inbox.send('bench', payload), published by inbox-relay (LISTEN, batches
#                of B, publisher confirms, marked done after the confirms)
#        theirs: its initializeMessageStorage (INSERT into its outbox table), published by its
#                listener (by default its logical-replication listener, wal_level = logical,
#                with full concurrency; or its polling listener: its next_outbox_messages
#                function every PEER_POLL_MS, batches of B, messages marked "parallel"), whose
#                handler publishes each message with amqplib's confirm channel and waits for
#                that confirm before the library marks the message processed (in a transaction
#                of its own, from a pool of 10 connections)
#   1b. the same messages committed while no relay runs, then the relay started: the rate
#      from the first arrival to the last (what the relay alone sustains; in 1, ours can be
#      bound by the producers)
#   2. commit-to-publish latency at a steady R commits a second: from each COMMIT's return to
#      the arrival of its message at the consumer, p50 and p99, for both
#   3. inbox: N deliveries (and N/10 second copies) waiting in a queue, consumed with a
#      prefetch of 100 and pools of 10 connections, processed idempotently, each message
#      writing one row to bench_effects:
#        ours:   SELECT inbox.apply('bench', message_id, 'bench_effect(jsonb)', payload), acked
#                after it returns
#        theirs: its inbox storage (INSERT ... ON CONFLICT DO NOTHING in a transaction, acked
#                after the commit), then its inbox listener runs the handler in the transaction
#                that marks the message processed (attempt and poisonous-message protection on,
#                as its README advises)
#      the rate is N over the time from the start of consuming until bench_effects has N rows.
# Every message of ours must arrive once (or the script fails); a message of theirs that has not
# arrived after 10 s without arrivals is counted and reported with what its table and its log
# say. Rounds are interleaved (ours, theirs, ours, ...); the machine may be shared with other
# work, so the script prints every round and the median ratio with its range.
#   test/bench/vs_pg_transactional_outbox.sh [N=10000] [rounds=3] [R=500] [listener=replication]
# Environment: BATCH (B, 100), PEER_POLL_MS (its polling interval, 100; it has no LISTEN),
# PARTS (which of 1 1b 2 3 to run, "1 1b 2 3").
set -euo pipefail
messages=${1:-10000}
rounds=${2:-3}
rate=${3:-500}
listener=${4:-replication}
batch=${BATCH:-100}
peer_poll_ms=${PEER_POLL_MS:-100}
parts=${PARTS:-1 1b 2 3}
case $listener in polling | replication) ;; *) echo "listener: polling or replication"; exit 2 ;;
esac

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
bench_dir=$source_dir/test/bench/pg_transactional_outbox
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
# wal_level = logical for the peer's replication listener; the same server for both sides.
private_cluster_start "wal_level = logical" "max_wal_senders = 4" "max_replication_slots = 4" \
    "inbox.purge_worker = off"
background_pids=()
stop_background() {
    local pid
    for pid in "${background_pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    background_pids=()
}
trap 'stop_background; rabbitmq_stop; cluster_stop; rm -rf "$work"' EXIT
rabbitmq_start "$work/rabbitmq" >/dev/null
amqp_url="amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/"

mkdir "$work/node"
cp "$bench_dir"/package.json "$bench_dir"/*.mjs "$work/node/"
(cd "$work/node" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
peer_version=$(cd "$work/node" &&
    node -p "require('pg-transactional-outbox/package.json').version")

cluster_psql -c "CREATE EXTENSION inbox" \
    -c "CREATE TABLE bench_effects (order_no int NOT NULL, amount int NOT NULL)" \
    -c "CREATE FUNCTION bench_effect(payload jsonb) RETURNS void LANGUAGE sql AS
        \$\$ INSERT INTO bench_effects VALUES ((payload->>'order')::int,
                                                (payload->>'amount')::int) \$\$"
(cd "$work/node" && node peer.mjs setup --pg "$cluster_dir" --listener "$listener")

node_run() { (cd "$work/node" && node "$@"); }
amqp_reset() { node_run driver.mjs reset --amqp "$amqp_url"; }
# The peer's replication slots skip what the other side wrote meanwhile (nothing of theirs is
# pending then), so that its listener does not decode our rounds' WAL.
advance_slots() {
    [ "$listener" = replication ] || return 0
    sql postgres "SELECT count(pg_replication_slot_advance(slot_name, pg_current_wal_lsn()))
                  FROM pg_replication_slots" >/dev/null
}

# Starts a background process whose output goes to LOG and waits until LOG has PATTERN.
start_until() {
    local log=$1 pattern=$2
    shift 2
    (cd "$work/node" && exec "$@") >"$log" 2>&1 &
    background_pids+=($!)
    local deadline=$((SECONDS + 30))
    until grep -q "$pattern" "$log"; do
        if ! kill -0 "${background_pids[-1]}" 2>/dev/null || ((SECONDS > deadline)); then
            echo "did not start: $*" >&2
            cat "$log" >&2
            exit 1
        fi
        sleep 0.05
    done
}

start_ours_relay() {
    start_until "$work/relay.log" "connected to amqp" "$private_bindir/inbox-relay" \
        --db "host=$cluster_dir user=postgres dbname=postgres" --amqp "$amqp_url" \
        --batch "$batch" --name bench
}

start_peer_outbox() {
    start_until "$work/peer.log" "started" node peer.mjs outbox --pg "$cluster_dir" \
        --amqp "$amqp_url" --listener "$listener" --batch "$batch" --poll-ms "$peer_poll_ms"
}

clean_outboxes() {
    sql postgres "DELETE FROM inbox.outbox_messages; DELETE FROM inbox.outbox_delivered" >/dev/null
    sql postgres "TRUNCATE outbox" >/dev/null
    cluster_psql -c "VACUUM ANALYZE" >/dev/null
    advance_slots
    amqp_reset
}

# One run of part 1 or 2: SIDE (ours or peer), RATE (0: as fast as they go), N; prints the
# driver's JSON line.
outbox_run() (
    trap stop_background EXIT
    local side=$1 run_rate=$2 count=$3
    clean_outboxes
    if [ "$side" = ours ]; then start_ours_relay; else start_peer_outbox; fi
    node_run driver.mjs outbox --side "$side" --pg "$cluster_dir" --amqp "$amqp_url" \
        --queue bench --messages "$count" --rate "$run_rate" --producers 4
)

# Part 1b: SIDE's relay started by the driver after the last COMMIT, as FILE's one command.
outbox_backlog_run() {
    local side=$1 script=$work/backlog-relay.sh
    clean_outboxes
    if [ "$side" = ours ]; then
        printf 'exec %q --db %q --amqp %q --batch %q --name bench\n' \
            "$private_bindir/inbox-relay" "host=$cluster_dir user=postgres dbname=postgres" \
            "$amqp_url" "$batch" >"$script"
    else
        printf 'cd %q && exec node peer.mjs outbox --pg %q --amqp %q --listener %q --batch %q' \
            "$work/node" "$cluster_dir" "$amqp_url" "$listener" "$batch" >"$script"
        printf ' --poll-ms %q\n' "$peer_poll_ms" >>"$script"
    fi
    node_run driver.mjs outbox --side "$side" --pg "$cluster_dir" --amqp "$amqp_url" \
        --queue bench --messages "$messages" --rate 0 --producers 4 --backlog-spawn "$script"
    cp "$script.log" "$work/peer.log"
}

field() { node -e "console.log(JSON.parse(process.argv[1]).$2)" "$1"; }

# Checks that a run delivered no message twice and nothing unknown, and ours every message.
check_run() {
    local json=$1 label=$2
    if [ "$(field "$json" unknown)" != 0 ] || [ "$(field "$json" duplicates)" != 0 ] ||
        { [[ $label == *ours ]] &&
            [ "$(field "$json" arrived)" != "$(field "$json" messages)" ]; }; then
        echo "$label: not every message arrived once: $json"
        exit 1
    fi
}

# For a run of the peer: what never arrived, what its outbox table says of it, what its
# listener logged. Nothing when everything arrived.
peer_missing() {
    local json=$1 missing
    missing=$(($(field "$json" messages) - $(field "$json" arrived)))
    [ "$missing" -gt 0 ] || return 0
    echo "; $missing of $(field "$json" messages) never arrived (its outbox:" \
        "$(sql postgres "SELECT count(*) FROM outbox WHERE processed_at IS NULL") unprocessed;" \
        "its log: $(grep -c MESSAGE_NOT_FOUND "$work/peer.log" || true) MESSAGE_NOT_FOUND)"
}

summary() { median_summary "%s %.3f (range %.3f to %.3f, %d rounds)\n" "$1"; }

echo "PostgreSQL $(sql postgres 'SHOW server_version'), RabbitMQ" \
    "$(rabbitmq_ctl version 2>/dev/null || echo '?'), Node $(node --version)," \
    "pg-transactional-outbox $peer_version ($listener listener$(
        [ "$listener" = polling ] && echo " every $peer_poll_ms ms"), batches of $batch)," \
    "inbox-relay batches of $batch; $(nproc) cores, shared: ratios of interleaved rounds"

if [[ " $parts " == *" 1 "* ]]; then
    echo "1. outbox throughput, $messages messages, one a transaction, 4 producers," \
        "first COMMIT to last arrival"
    ratios=()
    for round in $(seq "$rounds"); do
        ours=$(outbox_run ours 0 "$messages")
        check_run "$ours" "round $round, ours"
        peer=$(outbox_run peer 0 "$messages")
        check_run "$peer" "round $round, pg-transactional-outbox"
        ratios+=("$(ratio "$(field "$ours" rate)" "$(field "$peer" rate)")")
        echo "  round $round: send + inbox-relay $(field "$ours" rate)/s" \
            "(commits $(field "$ours" commit_rate)/s), pg-transactional-outbox" \
            "$(field "$peer" rate)/s (commits $(field "$peer" commit_rate)/s):" \
            "${ratios[-1]}$(peer_missing "$peer")"
    done
    printf '%s\n' "${ratios[@]}" | summary "  ours / theirs, median"
fi

if [[ " $parts " == *" 1b "* ]]; then
    echo "1b. outbox drain: $messages messages committed, then the relay started;" \
        "first arrival to last"
    ratios=()
    for round in $(seq "$rounds"); do
        ours=$(outbox_backlog_run ours)
        check_run "$ours" "round $round, ours"
        peer=$(outbox_backlog_run peer)
        check_run "$peer" "round $round, pg-transactional-outbox"
        ratios+=("$(ratio "$(field "$ours" drain_rate)" "$(field "$peer" drain_rate)")")
        echo "  round $round: inbox-relay $(field "$ours" drain_rate)/s," \
            "pg-transactional-outbox $(field "$peer" drain_rate)/s:" \
            "${ratios[-1]}$(peer_missing "$peer")"
    done
    printf '%s\n' "${ratios[@]}" | summary "  ours / theirs, median"
fi

if [[ " $parts " == *" 2 "* ]]; then
    latency_messages=$((rate * 15))
    echo "2. commit-to-publish latency at $rate commits/s, $latency_messages messages a run"
    ours_p50=() ours_p99=() peer_p50=() peer_p99=()
    for round in $(seq "$rounds"); do
        ours=$(outbox_run ours "$rate" "$latency_messages")
        check_run "$ours" "round $round, ours"
        peer=$(outbox_run peer "$rate" "$latency_messages")
        check_run "$peer" "round $round, pg-transactional-outbox"
        ours_p50+=("$(field "$ours" p50_ms)") ours_p99+=("$(field "$ours" p99_ms)")
        peer_p50+=("$(field "$peer" p50_ms)") peer_p99+=("$(field "$peer" p99_ms)")
        echo "  round $round: send + inbox-relay p50 ${ours_p50[-1]} ms, p99 ${ours_p99[-1]} ms" \
            "(commits $(field "$ours" commit_rate)/s); pg-transactional-outbox p50" \
            "${peer_p50[-1]} ms, p99 ${peer_p99[-1]} ms" \
            "(commits $(field "$peer" commit_rate)/s)$(peer_missing "$peer")"
    done
    latency_summary() { median_summary "%s %.1f ms (range %.1f to %.1f, %d rounds)\n" "$1"; }
    printf '%s\n' "${ours_p50[@]}" | latency_summary "  send + inbox-relay p50, median"
    printf '%s\n' "${ours_p99[@]}" | latency_summary "  send + inbox-relay p99, median"
    printf '%s\n' "${peer_p50[@]}" | latency_summary "  pg-transactional-outbox p50, median"
    printf '%s\n' "${peer_p99[@]}" | latency_summary "  pg-transactional-outbox p99, median"
fi

# One run of part 3 for SIDE; prints the rate and the effects written.
inbox_run() (
    trap stop_background EXIT
    local side=$1 duplicates=$((messages / 10)) since result
    sql postgres "TRUNCATE bench_effects, inbox" >/dev/null
    sql postgres "DELETE FROM inbox.messages WHERE consumer = 'bench'" >/dev/null
    cluster_psql -c "VACUUM ANALYZE" >/dev/null
    advance_slots
    amqp_reset
    node_run driver.mjs publish --amqp "$amqp_url" --queue inbox-bench \
        --messages "$messages" --duplicates "$duplicates"
    if [ "$side" = ours ]; then
        start_until "$work/consumer.log" "consuming" node driver.mjs inbox-ours \
            --pg "$cluster_dir" --amqp "$amqp_url" --queue inbox-bench --prefetch 100
    else
        start_until "$work/consumer.log" "consuming" node peer.mjs inbox --pg "$cluster_dir" \
            --amqp "$amqp_url" --queue inbox-bench --listener "$listener" --batch "$batch" \
            --poll-ms "$peer_poll_ms" --prefetch 100
    fi
    since=$(sed -n 's/^consuming at //p' "$work/consumer.log")
    result=$(node_run driver.mjs wait-effects --pg "$cluster_dir" --messages "$messages" \
        --since "$since")
    if [ "$(field "$result" effects)" != "$(field "$result" distinct)" ] ||
        { [ "$side" = ours ] && [ "$(field "$result" effects)" != "$messages" ]; }; then
        echo "$side: the effects are not one per message: $result" >&2
        exit 1
    fi
    echo "$(field "$result" rate) $(field "$result" effects)"
)

if [[ " $parts " == *" 3 "* ]]; then
    echo "3. inbox: $messages deliveries and $((messages / 10)) second copies, one effect each," \
        "start of consuming to the last effect"
    ratios=()
    for round in $(seq "$rounds"); do
        ours=$(inbox_run ours)
        ours=${ours%% *}
        peer=$(inbox_run peer)
        read -r peer peer_effects <<<"$peer"
        ratios+=("$(ratio "$ours" "$peer")")
        missing=""
        if [ "$peer_effects" != "$messages" ]; then
            missing="; $((messages - peer_effects)) never processed (its inbox:"
            missing+=" $(sql postgres "SELECT count(*) FROM inbox WHERE processed_at IS NULL")"
            missing+=" unprocessed; its log:"
            missing+=" $(grep -c MESSAGE_NOT_FOUND "$work/consumer.log" || true) MESSAGE_NOT_FOUND)"
        fi
        echo "  round $round: inbox.apply $ours/s, pg-transactional-outbox inbox $peer/s:" \
            "${ratios[-1]}$missing"
    done
    printf '%s\n' "${ratios[@]}" | summary "  ours / theirs, median"
fi
