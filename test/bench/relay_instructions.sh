#!/usr/bin/env bash
# What relaying a message costs the database, in instructions: inbox-relay (with
# inbox.outbox_retention 7d, then 0) against the hand-written relay of relay_throughput.sh
# (relay_baselines.cpp: SELECT ... FOR UPDATE SKIP LOCKED LIMIT B, publish, confirms, DELETE),
# both publishing to RabbitMQ with confirms in batches of B, the server under callgrind
# (callgrind.sh's callgrind_cluster_start): figures that the machine's load does not change. Each
# side runs twice over a filled outbox, N and WARM messages, and the instructions of its
# backend's whole life (callgrind.sh's backend_instructions) give
# per message (I(N) - I(WARM)) / (N - WARM): the connection's start and its first plans cancel
# out. inbox-relay's role has 'relay' access and not 'monitor': it reads no
# lag (a query once a second, whose count would follow the slowed server's clock). With KEPT, a
# fourth side: retention 7d over an outbox that keeps KEPT records of messages delivered earlier
# (kept_records.sql), as the default retention keeps a week of them.
#   test/bench/relay_instructions.sh [N=3000] [B=500] [KEPT=0]  (env KEEP=1 keeps the profiles)
set -euo pipefail
messages=${1:-3000}
batch=${2:-500}
kept=${3:-0}
warm=$batch

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/callgrind.sh"
source "$source_dir/scripts/rabbitmq.sh"
single_user_bench_start
trap 'rabbitmq_stop; as_cluster_user "$single_user_bindir/pg_ctl" -D "$work/server/data" -m immediate \
    -w stop >/dev/null 2>&1; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
callgrind_cluster_start "$work/server" "synchronous_commit = off" \
    "shared_preload_libraries = 'inbox'" "inbox.purge_worker = off"
rabbitmq_start "$work/rabbitmq" >/dev/null
baselines=$work/relay_baselines
g++ -std=c++20 -O2 -isystem "$(pg_config --includedir)" -I "$source_dir/src" \
    "$source_dir/test/bench/relay_baselines.cpp" -lpq -lrabbitmq -o "$baselines"

server_psql() {
    as_cluster_user "$single_user_bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$work/server" \
        -U postgres -d postgres "$@"
}
payload='{"type": "OrderPaid", "order": 41, "amount": 20, "note": "a message of about 100 bytes"}'
backend_instructions setup server_psql >/dev/null <<SQL
CREATE EXTENSION inbox;
CREATE ROLE bench_relay LOGIN;
SELECT inbox.grant_access('bench_relay', 'relay');
CREATE TABLE bench_outbox (id bigserial PRIMARY KEY, payload jsonb NOT NULL);
SQL
rabbitmq_purge_sink bench >/dev/null

fill() {
    local side=$1 count=$2
    if [ "$side" = hand ]; then
        backend_instructions fill server_psql -c "TRUNCATE bench_outbox" \
            -c "INSERT INTO bench_outbox (payload) SELECT '$payload' FROM generate_series(1, $count)"
    else
        # The relay's retention (a setting only a superuser sets): its role's.
        local retention=${side#retention-}
        backend_instructions fill server_psql -c "TRUNCATE inbox.outbox_messages, inbox.outbox_delivered" \
            -c "SELECT count(inbox.send('bench', '$payload')) FROM generate_series(1, $count)" \
            -c "ALTER ROLE bench_relay SET inbox.outbox_retention = '${retention%-kept}'"
        [ "$side" != retention-7d-kept ] ||
            backend_instructions fill server_psql -v kept="$kept" \
                -f "$source_dir/test/bench/kept_records.sql"
    fi >/dev/null
    # Each side starts from the same state: the filled table vacuumed, its statistics taken.
    backend_instructions fill server_psql -c "VACUUM ANALYZE inbox.outbox_messages, inbox.outbox_delivered, bench_outbox" \
        >/dev/null
}

# inbox-relay until it printed COUNT messages published; then SIGTERM (nothing left in flight).
run_inbox_relay() {
    local application=$1 count=$2 log=$work/relay.log
    : >"$log"
    "$private_bindir/inbox-relay" \
        --db "host=$work/server user=bench_relay dbname=postgres application_name=$application" \
        --amqp "amqp://guest:guest@127.0.0.1:$rabbitmq_amqp_port/" --batch "$batch" \
        --name "bench-$$" >"$log" 2>&1 &
    local pid=$!
    until [ "$(awk '$1 == "published" { n += $2 } END { print n + 0 }' "$log")" -ge "$count" ]; do
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
        sleep 0.1
    done
    kill -TERM "$pid"
    wait "$pid"
}

run_side() {
    local side=$1 count=$2 application=$1-$2
    case $side in
        hand) backend_instructions "$application" "$baselines" hand-relay \
                  "host=$work/server user=postgres dbname=postgres application_name=$application" \
                  "$rabbitmq_amqp_port" bench "$batch" ;;
        retention-*) backend_instructions "$application" \
                         run_inbox_relay "$application" "$count" ;;
    esac
}

echo "PostgreSQL $(server_psql -At -c 'SHOW server_version'), under callgrind:" \
    "$messages and $warm messages, batches of $batch"
declare -A per_message
sides=(retention-7d retention-0 hand)
[ "$kept" -eq 0 ] || sides+=(retention-7d-kept)
for side in "${sides[@]}"; do
    counted=()
    for count in "$messages" "$warm"; do
        fill "$side" "$count"
        counted+=("$(run_side "$side" "$count")")
        published=$(rabbitmq_purge_sink bench)
        [ "$published" = "$count" ] || { echo "$side published $published, not $count" >&2; exit 1; }
    done
    per_message[$side]=$(((counted[0] - counted[1]) / (messages - warm)))
    echo "$side: ${per_message[$side]} instructions per message (${counted[0]} and ${counted[1]})"
done
for side in "${sides[@]}"; do
    [ "$side" != hand ] || continue
    echo "inbox-relay $side / hand-written relay: $(ratio "${per_message[$side]}" "${per_message[hand]}")"
done
