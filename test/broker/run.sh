#!/usr/bin/env bash
# The broker suite: test/broker/payments.py against a private RabbitMQ node (scripts/rabbitmq.sh)
# and the database that the PG* variables name (it must exist and be empty). The node is stopped
# however the run ends.
#   test/broker/run.sh WORKDIR
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
source "$source_dir/scripts/cluster.sh"
source "$source_dir/scripts/rabbitmq.sh"
work=$1
mkdir -p "$work"

trap rabbitmq_stop EXIT
trap 'exit 1' INT TERM
rabbitmq_start "$work/rabbitmq"
# Debian's Python, where python3-psycopg and python3-pika are installed (not a python3 that
# happens to come first on PATH).
/usr/bin/python3 "$source_dir/test/broker/payments.py" run --amqp-port "$rabbitmq_amqp_port" \
    --work "$work"
