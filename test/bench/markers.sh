# Markers as live traffic leaves them, loaded in one SQL statement (generate_series), so that
# tens of millions load in minutes instead of hours of claims. Sourced by the benchmarks:
#   marker_insert LAYOUT COUNT [IDS] [FIRST]
# prints the INSERT that adds COUNT markers to the marker store of a database whose extension
# is at LAYOUT:
#   1.1, 1.2   into inbox.markers, consumers registered in inbox.consumer_registry first
#   1.0   into 1.0's table inbox.messages
# IDS: uuid (random UUIDs, the default), uuid7 (time-ordered UUIDs, as UUIDv7 lays them out:
# the millisecond of processed_at first, then random bits) or order (ids like
# orders-2026-000123456, scattered over a billion numbers without repeats). FIRST numbers the
# markers (default 1), so that loads can follow each other without repeating ids.
#
# As live traffic makes them: $marker_consumers consumers (default 4) take turns, and the
# markers are $marker_rate per second (default 100, all consumers together), the newest
# $marker_age_s seconds old (default 0), each with its own processed_at; they are inserted in
# time order into tables whose indexes already exist, so that heap and index pages fill and
# split as claims one by one would fill and split them.
marker_consumers=${marker_consumers:-4}
marker_rate=${marker_rate:-100}
marker_age_s=${marker_age_s:-0}

# A UUIDv7-like text of time expression $1: its millisecond in the first 48 bits, then random.
uuid7_sql() {
    local hex="lpad(to_hex((extract(epoch FROM $1) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 19)"
    echo "regexp_replace($hex, '^(.{8})(.{4})(.{4})(.{4})', '\\1-\\2-\\3-\\4-')"
}

# The rows (g, consumer, message_id, processed_at) of the markers first .. first + count - 1.
marker_rows() {
    local count=$1 ids=$2 first=$3 id
    case $ids in
        uuid) id="gen_random_uuid()::text" ;;
        uuid7) id=$(uuid7_sql "now() - make_interval(secs => $marker_age_s + ($first + $count - 1 - g)::float8 / $marker_rate)") ;;
        # 738197503 is prime and does not divide 10^9: g -> g * p mod 10^9 repeats no number.
        order) id="'orders-2026-' || lpad(((g::bigint * 738197503) % 1000000000)::text, 9, '0')" ;;
        *) echo "unknown ids: $ids" >&2; return 1 ;;
    esac
    cat <<SQL
SELECT g, 'consumer-' || (g % $marker_consumers) AS consumer, $id AS message_id,
       now() - make_interval(secs => $marker_age_s + ($first + $count - 1 - g)::float8 / $marker_rate)
           AS processed_at
FROM generate_series($first, $first + $count - 1) g
SQL
}

marker_insert() {
    local layout=$1 count=$2 ids=${3:-uuid} first=${4:-1}
    case $layout in
        1.1 | 1.2)
            cat <<SQL
DO \$\$ BEGIN
    PERFORM inbox.consumer_id('consumer-' || c) FROM generate_series(0, $marker_consumers - 1) c;
END \$\$;
INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
SELECT inbox.marker_time_bucket(m.processed_at), r.id, inbox.marker_time_offset(m.processed_at),
       inbox.message_key(m.message_id)
FROM ($(marker_rows "$count" "$ids" "$first")) m
JOIN inbox.consumer_registry r ON r.name = m.consumer
ORDER BY m.g;
SQL
            ;;
        1.0)
            cat <<SQL
INSERT INTO inbox.messages (consumer, message_id, processed_at)
SELECT m.consumer, m.message_id, m.processed_at
FROM ($(marker_rows "$count" "$ids" "$first")) m
ORDER BY m.g;
SQL
            ;;
        *) echo "unknown layout: $layout" >&2; return 1 ;;
    esac
}

# After a load: vacuums and analyzes the tables (a list) of database $1 as autovacuum would have
# long since done for markers this old. The checkpoint first writes the loading transaction's
# commit to the WAL on disk: until then, under synchronous_commit = off, VACUUM could neither
# set the tuples' hint bits nor mark their pages all-visible.
settle_markers() {
    local db=$1 tables=$2
    sql "$db" "CHECKPOINT"
    sql "$db" "VACUUM ANALYZE $tables"
    sql "$db" "CHECKPOINT"
}
