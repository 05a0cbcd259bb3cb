#!/usr/bin/env bash
# What the outbox removes, measured: the chain of test/relay/chain_test.py (payments sent with
# inbox.send, applied by a consumer that sends an OrderPaid, shipped downstream), run with the
# outbox and then, with the same seed and faults, with the OrderPaid published by the consumer
# itself after its COMMIT. DEATHS of the payments consumers fall between COMMIT and ack: there,
# the outbox loses nothing, the publish after COMMIT loses each one's OrderPaid for good (the
# redelivered payment is a duplicate, its handler skipped). Prints the figures of both chains.
#   test/bench/publish_after_commit.sh [deaths=5]
set -euo pipefail
deaths=${1:-5}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
trap 'rm -rf "$work"' EXIT

private_build
"$source_dir/test/relay/run.sh" "$work/chain" "$private_bindir" chain_test.py --compare \
    --commit-deaths "$deaths"
