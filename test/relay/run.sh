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
# The broker's AMQP over TLS (tls_test.py): a CA of the test's own, which signed the broker's
# certificate for localhost and the relay's own, and another CA, which signed a relay certificate
# only.
rabbitmq_tls_dir=$work/tls
mkdir -p "$rabbitmq_tls_dir"
make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj "/CN=inbox test $1" -keyout "$rabbitmq_tls_dir/$1.key" -out "$rabbitmq_tls_dir/$1.pem"
}
# NAME.pem and NAME.key: a certificate for CN (and its subjectAltName), signed by the CA named.
make_signed() {
    local name=$1 ca=$2 cn=$3
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$cn" \
        -keyout "$rabbitmq_tls_dir/$name.key" -out "$rabbitmq_tls_dir/$name.csr" &&
        openssl x509 -req -in "$rabbitmq_tls_dir/$name.csr" -CA "$rabbitmq_tls_dir/$ca.pem" \
            -CAkey "$rabbitmq_tls_dir/$ca.key" -CAcreateserial -days 2 \
            -extfile <(echo "subjectAltName = DNS:$cn") -out "$rabbitmq_tls_dir/$name.pem"
}
# The broker's for localhost; the relay's own (the broker asks for one), and one of another CA.
{ make_ca ca && make_ca other-ca && make_signed broker ca localhost &&
    make_signed relay ca inbox-relay && make_signed relay-other-ca other-ca inbox-relay; } \
    2>/dev/null || { echo "could not make the test's TLS certificates"; exit 1; }
chown -R "$cluster_user" "$rabbitmq_tls_dir" 2>/dev/null || true
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
    --pghost "$cluster_dir" --amqp-port "$rabbitmq_amqp_port" --amqps-port "$rabbitmq_amqps_port" \
    --tls-dir "$rabbitmq_tls_dir" --work "$work" "$@"
