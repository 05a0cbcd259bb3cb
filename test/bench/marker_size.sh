#!/usr/bin/env bash
# Bytes per marker: N markers with UUID message ids, and the heap and each index of
# inbox.messages divided by N. The rows are the ones inbox.claim writes, inserted in one statement
# with processed_at rising one millisecond apart, as markers of separate transactions do (a
# single transaction would give every row the same time and flatter the processed_at index).
#   test/bench/marker_size.sh [markers]        (default 1,000,000)
set -euo pipefail
markers=${1:-1000000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
private_cluster_start "max_wal_size = '4GB'" "fsync = off"

cluster_psql -v markers="$markers" <<'SQL'
CREATE EXTENSION inbox;
INSERT INTO inbox.messages (consumer, message_id, processed_at)
SELECT 'billing', gen_random_uuid()::text, now() - (:markers - g) * interval '1 millisecond'
FROM generate_series(1, :markers) g;
SELECT count(*) AS claimed FROM inbox.messages \gset
VACUUM ANALYZE inbox.messages;
\pset footer off
SELECT :claimed AS markers,
       pg_size_pretty(pg_total_relation_size('inbox.messages')) AS total,
       round(pg_relation_size('inbox.messages')::numeric / :claimed, 1) AS heap_bytes,
       round(pg_relation_size('inbox.messages_pkey')::numeric / :claimed, 1) AS pkey_bytes,
       round(pg_relation_size('inbox.messages_consumer_processed_at')::numeric / :claimed, 1)
           AS consumer_processed_at_bytes,
       round(pg_total_relation_size('inbox.messages')::numeric / :claimed, 1) AS total_bytes;
SQL
