#!/usr/bin/env bash
# Bytes per marker: every page of every table of the extension (heap, every index, toast, free
# space and visibility maps), divided by the number of markers, for N markers as live traffic
# leaves them (test/bench/markers.sh: several consumers, each marker with its own processed_at,
# inserted in time order into indexed tables). The same markers go into databases at 1.2, 1.1
# and 1.0 in the same run, for comparison (1.2 changed how consumers register, not what a
# marker holds). Two kinds of message ids: random UUIDs and ids like orders-2026-000123456.
#   test/bench/marker_size.sh [markers=1000000]
# Environment: marker_consumers (4), marker_rate (markers/s, 100): see test/bench/markers.sh.
set -euo pipefail
markers=${1:-1000000}

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/inbox-bench.XXXXXX")
source "$source_dir/test/bench/private_cluster.sh"
source "$source_dir/test/bench/markers.sh"
private_cluster_start "max_wal_size = '4GB'" "fsync = off" "synchronous_commit = off" \
    "autovacuum = off" "inbox.purge_worker = off"

# The tables of each layout: 1.1 and 1.2 store markers in inbox.markers, name their consumers
# in inbox.consumer_registry and keep fingerprints and results in inbox.marker_details (empty
# here: claims keep none); 1.0 has the one table inbox.messages.
tables() {
    case $1 in
        1.1 | 1.2) echo "inbox.markers, inbox.consumer_registry, inbox.marker_details" ;;
        1.0) echo "inbox.messages" ;;
    esac
}

# Prints one line per relation (heap with its toast and maps, each index) and the total.
report() {
    local db=$1 layout=$2
    cluster_psql -d "$db" -v layout="$layout" <<SQL
\pset footer off
SELECT count(*) AS markers FROM inbox.messages \gset
WITH tables AS (SELECT t::regclass AS tab FROM unnest(string_to_array('$(tables "$layout")', ', ')) t),
parts AS (
    SELECT t.tab::text AS relation,
           pg_table_size(t.tab) AS bytes
    FROM tables t
    UNION ALL
    SELECT i.indexrelid::regclass::text, pg_table_size(i.indexrelid)
    FROM tables t JOIN pg_index i ON i.indrelid = t.tab
)
SELECT :'layout' AS layout, relation, bytes,
       round(bytes::numeric / :markers, 1) AS bytes_per_marker
FROM parts
UNION ALL
SELECT :'layout', 'total (' || :markers || ' markers)', sum(bytes),
       round(sum(bytes) / :markers, 1)
FROM parts;
SQL
}

for ids in uuid order; do
    for layout in 1.2 1.1 1.0; do
        db="size_${ids}_${layout/./_}"
        sql postgres "CREATE DATABASE $db"
        sql "$db" "CREATE EXTENSION inbox VERSION '$layout'"
        echo "loading $markers markers with $ids ids into $db..."
        marker_insert "$layout" "$markers" "$ids" | cluster_psql -d "$db"
        settle_markers "$db" "$(tables "$layout")"
    done
done

for ids in uuid order; do
    echo
    echo "== $ids message ids ($marker_consumers consumers, $marker_rate markers/s)"
    for layout in 1.2 1.1 1.0; do report "size_${ids}_${layout/./_}" "$layout"; done
done
