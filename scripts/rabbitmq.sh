# A throwaway RabbitMQ node of Debian's rabbitmq-server, private to one test run: its own node
# name, Erlang cookie, data and log directories, and its own epmd, every port on 127.0.0.1 only.
# The Debian service (if running) is neither used nor disturbed. Run as the unprivileged
# $cluster_user of scripts/cluster.sh, which must be sourced first:
#   rabbitmq_start DIR        sets rabbitmq_amqp_port; DIR must not exist yet or be empty;
#                             $rabbitmq_erl_args, if set, are added to the node's Erlang flags;
#                             with $rabbitmq_tls_dir (ca.pem, broker.pem, broker.key, readable
#                             by the cluster user), AMQP over TLS too, on rabbitmq_amqps_port,
#                             for clients with a certificate that ca.pem signed
#   rabbitmq_ctl ARGS...      rabbitmqctl against that node
#   rabbitmq_stop             stops the node and its epmd (safe to call twice, or unstarted)
#   rabbitmq_purge_sink NAME  declares a durable fanout exchange NAME bound to a durable queue
#                             NAME (once), purges the queue, prints how many messages it held:
#                             where benchmarks publish what nobody reads
# DIR's parent must be reachable by the cluster user.

rabbitmq_bin=/usr/lib/rabbitmq/bin

# A base port from which the next 15 are free on 127.0.0.1: epmd, AMQP, distribution, the range
# rabbitmqctl's own short-lived node listens in, and AMQP over TLS.
rabbitmq_free_ports() {
    /usr/bin/python3 - <<'PY'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 60000)
    socks = []
    try:
        for port in range(base, base + 15):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", port))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
else:
    raise SystemExit("no free port range on 127.0.0.1")
PY
}

# Runs a command of this node as the cluster user, in the node's environment (set up by
# rabbitmq_start). RABBITMQ_CONF_ENV_FILE keeps /etc/rabbitmq/rabbitmq-env.conf out; HOME holds
# the node's private Erlang cookie.
rabbitmq_env() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$cluster_user" -- env PATH="$PATH" "${rabbitmq_vars[@]}" "$@"
    else
        env "${rabbitmq_vars[@]}" "$@"
    fi
}

# The same in the background, output to LOG, its pid in rabbitmq_spawned: the command itself is
# put in the background (a backgrounded function would be a subshell whose pid kills nothing),
# and runuser passes SIGTERM on to its child.
rabbitmq_spawn() {
    local log=$1
    shift
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$cluster_user" -- env PATH="$PATH" "${rabbitmq_vars[@]}" "$@" >"$log" 2>&1 &
    else
        env "${rabbitmq_vars[@]}" "$@" >"$log" 2>&1 &
    fi
    rabbitmq_spawned=$!
}

rabbitmq_ctl() {
    rabbitmq_env "$rabbitmq_bin/rabbitmqctl" -q "$@"
}

rabbitmq_start() {
    rabbitmq_dir=$1
    mkdir -p "$rabbitmq_dir/log" "$rabbitmq_dir/mnesia"
    rabbitmq_base_port=$(rabbitmq_free_ports) || return 1
    rabbitmq_amqp_port=$((rabbitmq_base_port + 1))
    rabbitmq_amqps_port=$((rabbitmq_base_port + 14))
    rabbitmq_node="inbox-test-$rabbitmq_base_port@localhost"
    local base=$rabbitmq_base_port
    rabbitmq_vars=(
        HOME="$rabbitmq_dir"
        RABBITMQ_CONF_ENV_FILE="$rabbitmq_dir/rabbitmq-env.conf"
        RABBITMQ_CONFIG_FILE="$rabbitmq_dir/rabbitmq.conf"
        RABBITMQ_ENABLED_PLUGINS_FILE="$rabbitmq_dir/enabled_plugins"
        RABBITMQ_MNESIA_BASE="$rabbitmq_dir/mnesia" RABBITMQ_LOG_BASE="$rabbitmq_dir/log"
        RABBITMQ_NODENAME="$rabbitmq_node"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$rabbitmq_amqp_port
        RABBITMQ_DIST_PORT=$((base + 2))
        RABBITMQ_CTL_DIST_PORT_MIN=$((base + 3)) RABBITMQ_CTL_DIST_PORT_MAX=$((base + 13))
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} ${rabbitmq_erl_args:-}"
        RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
        ERL_EPMD_PORT=$base ERL_EPMD_ADDRESS=127.0.0.1
    )
    : >"$rabbitmq_dir/rabbitmq-env.conf"
    echo '[].' >"$rabbitmq_dir/enabled_plugins"
    cat >"$rabbitmq_dir/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$rabbitmq_amqp_port
log.console = false
log.file.level = warning
EOF
    if [ -n "${rabbitmq_tls_dir:-}" ]; then
        cat >>"$rabbitmq_dir/rabbitmq.conf" <<EOF
listeners.ssl.default = 127.0.0.1:$rabbitmq_amqps_port
ssl_options.cacertfile = $rabbitmq_tls_dir/ca.pem
ssl_options.certfile = $rabbitmq_tls_dir/broker.pem
ssl_options.keyfile = $rabbitmq_tls_dir/broker.key
ssl_options.verify = verify_peer
ssl_options.fail_if_no_peer_cert = true
EOF
    fi
    # The cookie must be private to its owner, or Erlang refuses it.
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$rabbitmq_dir/.erlang.cookie"
    chmod 400 "$rabbitmq_dir/.erlang.cookie"
    chown -R "$cluster_user" "$rabbitmq_dir" 2>/dev/null || true

    # Our own epmd in the foreground, so that it has a pid to stop: the node and rabbitmqctl
    # would otherwise start a daemonized one (and do so whenever none answers on the port).
    rabbitmq_spawn "$rabbitmq_dir/log/epmd.log" epmd -port "$rabbitmq_base_port" -address 127.0.0.1
    rabbitmq_epmd_pid=$rabbitmq_spawned
    local deadline=$((SECONDS + 30))
    until rabbitmq_env epmd -port "$rabbitmq_base_port" -names >/dev/null 2>&1; do
        if ! kill -0 "$rabbitmq_epmd_pid" 2>/dev/null || ((SECONDS > deadline)); then
            echo "epmd did not start:"
            cat "$rabbitmq_dir/log/epmd.log"
            return 1
        fi
        sleep 0.1
    done
    rabbitmq_spawn "$rabbitmq_dir/log/startup.log" "$rabbitmq_bin/rabbitmq-server"
    rabbitmq_server_pid=$rabbitmq_spawned
    # await_startup fails at once until the node has registered with epmd.
    deadline=$((SECONDS + 90))
    until rabbitmq_ctl --timeout 30 await_startup >/dev/null 2>&1; do
        if ! kill -0 "$rabbitmq_server_pid" 2>/dev/null || ((SECONDS > deadline)); then
            echo "rabbitmq did not start:"
            tail -n 20 "$rabbitmq_dir"/log/*.log
            return 1
        fi
        sleep 1
    done
}

# Also kills what a failed start left; waits for the processes so that no port stays taken.
rabbitmq_stop() {
    [ -n "${rabbitmq_server_pid:-}" ] || return 0
    if kill -0 "$rabbitmq_server_pid" 2>/dev/null; then
        # rabbitmqctl would start a daemonized epmd if ours is gone (a signal to the whole
        # process group): then the node is only sent SIGTERM.
        if kill -0 "$rabbitmq_epmd_pid" 2>/dev/null; then
            rabbitmq_ctl shutdown >/dev/null 2>&1 || true
        fi
        kill "$rabbitmq_server_pid" 2>/dev/null || true
    fi
    wait "$rabbitmq_server_pid" 2>/dev/null || true
    kill "$rabbitmq_epmd_pid" 2>/dev/null || true
    wait "$rabbitmq_epmd_pid" 2>/dev/null || true
    # Any epmd that Erlang started for this node anyway answers on its private port.
    rabbitmq_env epmd -port "$rabbitmq_base_port" -kill >/dev/null 2>&1 || true
    rabbitmq_server_pid=
    return 0
}

rabbitmq_purge_sink() {
    /usr/bin/python3 -c "
import pika
with pika.BlockingConnection(pika.ConnectionParameters('127.0.0.1', $rabbitmq_amqp_port)) as c:
    channel = c.channel()
    channel.exchange_declare('$1', 'fanout', durable=True)
    channel.queue_declare('$1', durable=True)
    channel.queue_bind('$1', '$1')
    print(channel.queue_purge('$1').method.message_count)"
}
