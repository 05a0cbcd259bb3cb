#!/usr/bin/env bash
# The share of a claiming backend's CPU time spent counting, measured with perf (software clock
# samples with call graphs, so it works in virtual machines without hardware counters). Less
# sensitive to a busy machine than comparing throughputs: it attributes the samples of one
# process instead of comparing two noisy runs. The backend claims in a loop, one transaction per
# claim and no client round trip (the harshest case for the commit-time publication):
#   new         first deliveries: pending count, published by the commit callback
#   duplicate   repeats of committed markers: counted in shared memory when answered
# Counting = count_claim() and the commit callback, with everything they call.
#   test/bench/stats_profile.sh [claims per kind]          (needs perf)
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
claims=${1:-100000}
command -v perf >/dev/null || { echo "perf is needed (Debian: linux-perf)"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "fsync = off" "synchronous_commit = off" "max_wal_size = '4GB'"

cluster_psql -c 'CREATE EXTENSION inbox' -c "
    INSERT INTO inbox.messages (consumer, message_id)
    SELECT 'bench-' || c, 'known-' || m FROM generate_series(0, 3) c, generate_series(0, 999) m" \
    -c "
    CREATE PROCEDURE claim_loop(n int, kind text) LANGUAGE plpgsql AS \$\$
    DECLARE base bigint := (random() * 1e12)::bigint;
    BEGIN
        FOR i IN 1..n LOOP
            IF kind = 'new' THEN
                PERFORM inbox.claim('bench-' || i % 4, 'new-' || base + i);
            ELSE
                PERFORM inbox.claim('bench-' || i % 4, 'known-' || i % 1000);
            END IF;
            COMMIT;
        END LOOP;
    END \$\$"

for kind in new duplicate; do
    cluster_psql -At -c 'SELECT pg_backend_pid()' -c 'SELECT pg_sleep(1)' \
        -c "CALL claim_loop($claims, '$kind')" >"$work/$kind.out" &
    sleep 0.5
    pid=$(head -1 "$work/$kind.out")
    perf record -q -e cpu-clock -F 2000 --call-graph dwarf -p "$pid" -o "$work/$kind.perf" \
        2>/dev/null &
    perf_pid=$!
    wait %1
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    perf report -i "$work/$kind.perf" --children --sort symbol --stdio -g none 2>/dev/null |
        awk -v k="$kind" -v n="$claims" '
            /\[\.\] inbox_claim / { claim = $1 + 0 }
            /\[\.\] (count_claim|\(anonymous namespace\)::on_transaction_end) / { counting += $1 }
            END { printf "%s claims (%d): %.2f%% of the backend CPU in inbox.claim, %.2f%% counting: throughput ratio on / off about %.4f\n", k, n, claim, counting, 1 - counting / 100 }'
done
