#!/usr/bin/env bash
# Throughput of inbox.apply on one node against the same work on a Citus cluster (a coordinator
# and two workers) on the same machine: called on the coordinator, and delegated to the marker's
# worker with create_distributed_function. Every message records a payment keyed by the stored
# form of its id, co-located with its marker. Needs Citus installed into the system's
# PostgreSQL (see docs/citus.md).
#
# The three are measured in alternating runs of `seconds` each, the order rotating every round,
# so that drift in the machine's load hits them alike; the ratios of each round and their
# medians are printed. Then, in one pgbench run per round (every transaction picks one at
# random), a claim and a write on the same worker in one transaction by the owner of the markers
# (one connection per worker) against the same by an application role (its own connection and
# the owner's: two-phase commit).
#   test/bench/citus_throughput.sh [seconds-per-run] [rounds] [clients]
set -euo pipefail
seconds=${1:-10}
rounds=${2:-5}
clients=${3:-4}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/pgbench_compare.sh"
[ -e "$(pg_config --pkglibdir)/citus.so" ] || { echo "Citus is not installed" >&2; exit 1; }

private_build
cluster_bindir=$private_bindir
# The coordinator and the two workers, each listening only on a Unix socket in a directory of
# its own (all on port 5432 there). pgbench_compare.sh talks to the coordinator.
nodes=("$work/coordinator" "$work/worker1" "$work/worker2")
cluster_dir=${nodes[0]}

stop_nodes() {
    local node
    for node in "${nodes[@]}"; do
        [ -f "$node/data/postmaster.pid" ] &&
            as_cluster_user "$cluster_bindir/pg_ctl" -D "$node/data" -m fast -w stop >/dev/null
    done
    rm -rf "$work"
}
trap stop_nodes EXIT

node_sql() {
    local node=$1 db=$2
    shift 2
    PGOPTIONS="-c client_min_messages=warning" as_cluster_user "$cluster_bindir/psql" -h "$node" \
        -U postgres -d "$db" -X -q -At \
        -v ON_ERROR_STOP=1 "$@"
}

for node in "${nodes[@]}"; do
    mkdir -p "$node" && chown "$cluster_user" "$node" 2>/dev/null || true
    as_cluster_user "$cluster_bindir/initdb" -D "$node/data" -A trust -U postgres --no-sync >/dev/null
    cat >>"$node/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$node'
shared_preload_libraries = 'citus,inbox'
max_connections = 200
max_prepared_transactions = 200
shared_buffers = '256MB'
synchronous_commit = off
citus.node_conninfo = 'sslmode=disable'
citus.local_hostname = '$node'
inbox.purge_worker = off
EOF
    as_cluster_user "$cluster_bindir/pg_ctl" -D "$node/data" -l "$node/server.log" -w start >/dev/null
done

# The cluster: database postgres, with Citus on every node. One node: database single of the
# coordinator's server, without Citus.
schema='CREATE TABLE payments (message_key bytea PRIMARY KEY, amount int NOT NULL);
CREATE FUNCTION record_payment(payload jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO payments VALUES (inbox.message_key(payload ->> $q$id$q$), (payload ->> $q$amount$q$)::int)
$$;
CREATE FUNCTION pay(key bytea, message_id text, payload jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RETURN inbox.apply($q$bench$q$, message_id, $q$record_payment(jsonb)$q$, payload);
END $$;
SELECT inbox.configure_consumer($q$bench$q$);'
node_sql "${nodes[0]}" postgres -c 'CREATE DATABASE single'
node_sql "${nodes[0]}" single -c 'CREATE EXTENSION inbox' -c "$schema" >/dev/null
for node in "${nodes[@]}"; do node_sql "$node" postgres -c 'CREATE EXTENSION citus'; done
node_sql "${nodes[0]}" postgres -c "SELECT citus_set_coordinator_host('${nodes[0]}', 5432)" \
    -c "SELECT citus_add_node('${nodes[1]}', 5432)" \
    -c "SELECT citus_add_node('${nodes[2]}', 5432)" >/dev/null
node_sql "${nodes[0]}" postgres -c 'CREATE EXTENSION inbox' -c 'SELECT inbox.distribute()' \
    -c "$schema" \
    -c "SELECT create_distributed_table('payments', 'message_key', colocate_with := 'inbox.markers')" \
    -c "SELECT create_distributed_function('pay(bytea, text, jsonb)', 'key', colocate_with := 'inbox.markers')" \
    >/dev/null

pgbench_script apply <<'SQL'
\set id random(1, 1000000000)
SELECT inbox.apply('bench', 'm-' || :id, 'record_payment(jsonb)', jsonb_build_object('id', 'm-' || :id, 'amount', 7));
SQL
pgbench_script delegated <<'SQL'
\set id random(1, 1000000000)
SELECT pay(inbox.message_key('m-' || :id), 'm-' || :id, jsonb_build_object('id', 'm-' || :id, 'amount', 7));
SQL

tps() {
    local db=$1 script=$2
    as_cluster_user "$cluster_bindir/pgbench" -h "$cluster_dir" -U postgres -n -M prepared \
        -c "$clients" -j "$clients" -T "$seconds" -f "$work/$script.sql" "$db" 2>&1 |
        sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

echo "inbox.apply, pgbench, $clients clients, ${seconds}s runs, $rounds rounds: transactions per second"
coordinator_ratios=() delegated_ratios=()
runs=("single apply" "postgres apply" "postgres delegated")
for round in $(seq "$rounds"); do
    declare -A measured=()
    for i in 0 1 2; do
        run=${runs[(i + round) % 3]}
        measured[$run]=$(tps $run)
    done
    single=${measured[single apply]} coordinator=${measured[postgres apply]}
    delegated=${measured[postgres delegated]}
    coordinator_ratios+=("$(ratio "$coordinator" "$single")")
    delegated_ratios+=("$(ratio "$delegated" "$single")")
    printf '  round %d: one node %8.1f  coordinator %8.1f (%s)  delegated %8.1f (%s)\n' \
        "$round" "$single" "$coordinator" "${coordinator_ratios[-1]}" "$delegated" \
        "${delegated_ratios[-1]}"
    unset measured
done
printf '%s\n' "${coordinator_ratios[@]}" | median_ratio "coordinator / one node"
printf '%s\n' "${delegated_ratios[@]}" | median_ratio "delegated / one node"

# A claim and a write on the same worker, by the owner and by an application role: the ids are
# drawn from those whose marker and ledger row share a worker.
node_sql "${nodes[0]}" postgres >/dev/null <<'SQL'
CREATE ROLE app LOGIN;  -- Citus connects to the workers as the role
GRANT USAGE ON SCHEMA inbox TO app;
GRANT EXECUTE ON FUNCTION inbox.claim(text, text) TO app;
CREATE TABLE ledger (id text, amount int);
SELECT create_distributed_table('ledger', 'id');
GRANT INSERT ON ledger TO app;
CREATE TABLE same_worker_ids (n int PRIMARY KEY, k int NOT NULL);
INSERT INTO same_worker_ids
SELECT row_number() OVER (), g
FROM generate_series(1, 200000) g
JOIN pg_dist_placement m ON m.shardid =
     get_shard_id_for_distribution_column('inbox.markers', inbox.message_key('w-' || g))
JOIN pg_dist_placement l ON l.shardid = get_shard_id_for_distribution_column('ledger', 'w-' || g)
WHERE m.groupid = l.groupid;
SELECT create_reference_table('same_worker_ids');
SELECT inbox.configure_consumer('roles-owner'), inbox.configure_consumer('roles-app');
SQL
count=$(node_sql "${nodes[0]}" postgres -c 'SELECT count(*) FROM same_worker_ids')
for role in owner app; do
    set_role=''
    [ "$role" = app ] && set_role='SET LOCAL ROLE app;'
    pgbench_script "$role" <<SQL
\\set n random(1, $count)
SELECT k FROM same_worker_ids WHERE n = :n \\gset
BEGIN;
$set_role
SELECT inbox.claim('roles-$role', 'w-' || :k);
INSERT INTO ledger VALUES ('w-' || :k, 1);
COMMIT;
SQL
done
echo "a claim and a write on the same worker in one transaction: application role / owner"
pgbench_compare app owner
