#!/usr/bin/env bash
# The relay suite: test/relay/relay_test.py drives inbox-relay (installed in BINDIR with the
# extension) against a PostgreSQL cluster and a RabbitMQ node of its own, which it restarts
# (scripts/cluster.sh, scripts/rabbitmq.sh): the shared cluster of test/run.sh is left alone.
# Both are stopped however the run ends. SCENARIO: another script of test/relay sharing that
# setup (chain_test.py), given ARGS after the common ones.
#   test/relay/run.sh WORKDIR BINDIR [SCENARIO [ARGS ...]]
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/scripts/cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
work=$1
bindir=$2
scenario=${3:-relay_test.py}
shift 2
(($# == 0)) || shift
mkdir -p "$work"
chown "$cluster_user" "$work" 2>/dev/null || true

trap 'rabbitmq_stop; cluster_stop' EXIT
trap 'exit 1' INT TERM
# (prepared transactions: relay_test.py's producer commits one in two phases)
cluster_start "$bindir" "$work/pg" "shared_preload_libraries = 'inbox'" "fsync = off" \
    "max_prepared_transactions = 2" "log_line_prefix = '%m [%p] %q%a '" || exit 1
rabbitmq_start "$work/rabbitmq"

# The commands the test restarts them with, one argument per NUL-terminated field.
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(runuser -u "$cluster_user" -- env PATH="$PATH")
printf '%s\0' "${as_user[@]}" "$bindir/pg_ctl" -D "$cluster_dir/data" -l "$cluster_dir/server.log" \
    -m immediate -w restart >"$work/pg-restart.args"
printf '%s\0' "${as_user[@]}" env "${rabbitmq_vars[@]}" "$rabbitmq_bin/rabbitmqctl" -q \
    >"$work/rabbitmqctl.args"

# Debian's Python, where python3-psycopg and python3-pika are installed.
/usr/bin/python3 "$source_dir/test/relay/$scenario" --relay "$bindir/inbox-relay" \
    --pghost "$cluster_dir" --amqp-port "$rabbitmq_amqp_port" --work "$work" "$@"
