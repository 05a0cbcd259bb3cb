-- Streams (docs/streams.md): one committed position per (consumer, stream), moved by the
-- claiming transaction; next, duplicate and, for contiguous streams, gap.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
CREATE TABLE ledger (stream text, position bigint);

-- A stream nobody claimed has no position; a partition's offsets start anywhere, 0 included.
SELECT inbox.stream_position('orders-consumer', 'orders/0') AS unknown;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 0) AS first;
SELECT inbox.stream_position('orders-consumer', 'orders/0') AS resume_after;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 0) AS again;
-- Offsets with holes (compaction, transactions) are next, not gaps, unless contiguous.
SELECT inbox.claim_position('orders-consumer', 'orders/0', 7) AS after_a_hole;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 3) AS below;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 7) AS at;
SELECT consumer, stream, position, updated_at <= clock_timestamp() AS dated FROM inbox.streams;

-- The stream moves at commit only: a rollback leaves it where it was, with the work.
BEGIN;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 8) AS next;
INSERT INTO ledger VALUES ('orders/0', 8);
ROLLBACK;
SELECT inbox.stream_position('orders-consumer', 'orders/0') AS still, count(*) AS work FROM ledger;
BEGIN;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 8) AS next;
SAVEPOINT s;
SELECT inbox.claim_position('orders-consumer', 'orders/0', 9) AS next;
ROLLBACK TO SAVEPOINT s;
SELECT inbox.stream_position('orders-consumer', 'orders/0') AS in_transaction;
COMMIT;
SELECT inbox.stream_position('orders-consumer', 'orders/0') AS committed;

-- A new stream of the same consumer, and the same stream of another consumer, are their own.
SELECT inbox.claim_position('orders-consumer', 'orders/1', 5) AS other_partition;
SELECT inbox.claim_position('audit', 'orders/0', 2) AS other_consumer;
SELECT consumer, stream, position FROM inbox.streams ORDER BY consumer, stream;

-- Contiguous: an aggregate's events start at 1 and have no holes; a missing one is a gap, and
-- the stream does not move.
SELECT inbox.claim_position('accounts', 'account-42', 2, true) AS before_the_first;
SELECT inbox.stream_position('accounts', 'account-42') AS not_started;
SELECT inbox.claim_position('accounts', 'account-42', 1, true) AS first;
SELECT inbox.claim_position('accounts', 'account-42', 3, true) AS skipped_two;
SELECT inbox.claim_position('accounts', 'account-42', 2, true) AS second;
SELECT inbox.claim_position('accounts', 'account-42', 2, true) AS second_again;
-- Position 0 is before a contiguous stream's first: refused (an aggregate numbered from 0 would
-- otherwise skip its first event as a duplicate), alone or in a batch, on a new stream or not.
SELECT inbox.claim_position('accounts', 'account-42', 0, true) AS below_the_first;
SELECT inbox.claim_positions('accounts', 'account-0', ARRAY[2, 1, 0], true) AS below_the_first;
SELECT inbox.stream_position('accounts', 'account-0') AS nothing_claimed;
SELECT inbox.claim_position('accounts', 'account-42', 3, true) AS third;
SELECT inbox.stream_position('accounts', 'account-42') AS at_three;

-- The batch form: a polled batch of one stream in one call; the positions that are next come
-- back ascending, whatever order and repeats they came in; the stream moves to the last.
SELECT inbox.claim_positions('orders-consumer', 'orders/2', ARRAY[12, 10, 11, 11]) AS first_batch;
SELECT inbox.claim_positions('orders-consumer', 'orders/2', ARRAY[11, 12, 13, 15]) AS redelivered;
SELECT inbox.stream_position('orders-consumer', 'orders/2') AS at_fifteen;
SELECT inbox.claim_positions('orders-consumer', 'orders/2', ARRAY[]::bigint[]) AS empty;
SELECT inbox.claim_positions('orders-consumer', 'orders/2', ARRAY[3, 14]) AS all_duplicates;
-- Contiguous, the run stops at the first hole: what follows it is not next.
SELECT inbox.claim_positions('accounts', 'account-42', ARRAY[2, 3, 4, 5, 7, 8], true)
    AS up_to_the_hole;
SELECT inbox.claim_positions('accounts', 'account-7', ARRAY[2, 3], true) AS no_first;
SELECT inbox.claim_positions('accounts', 'account-7', ARRAY[1, 2, 3], true) AS from_the_first;
-- A batch rolled back moves nothing.
BEGIN;
SELECT inbox.claim_positions('accounts', 'account-7', ARRAY[4, 5], true) AS next;
ROLLBACK;
SELECT inbox.stream_position('accounts', 'account-7') AS still_three;

-- Refused arguments, each with its SQLSTATE, and nothing written.
SELECT statement, outcome(statement) FROM (VALUES
    ($$SELECT inbox.claim_position(NULL, 'orders/0', 1)$$),
    ($$SELECT inbox.claim_position('orders-consumer', NULL, 1)$$),
    ($$SELECT inbox.claim_position('orders-consumer', '', 1)$$),
    ($$SELECT inbox.claim_position('orders-consumer', repeat('s', 129), 1)$$),
    ($$SELECT inbox.claim_position('orders-consumer', 'orders/0', NULL)$$),
    ($$SELECT inbox.claim_position('orders-consumer', 'orders/0', -1)$$),
    ($$SELECT inbox.claim_position('orders-consumer', 'orders/0', 1, NULL)$$),
    ($$SELECT inbox.claim_positions('orders-consumer', 'orders/0', NULL)$$),
    ($$SELECT inbox.claim_positions('orders-consumer', 'orders/0', ARRAY[1, NULL])$$),
    ($$SELECT inbox.claim_positions('orders-consumer', 'orders/0', ARRAY[1, -2])$$),
    ($$SELECT inbox.stream_position('orders-consumer', NULL)$$)
) AS s(statement);
-- A read-only transaction claims nothing.
BEGIN READ ONLY;
SELECT outcome($$SELECT inbox.claim_position('orders-consumer', 'orders/0', 100)$$);
ROLLBACK;
SELECT count(*) AS streams, max(position) FILTER (WHERE stream = 'orders/0') AS orders_0
FROM inbox.streams WHERE consumer = 'orders-consumer';
SELECT inbox.claim_position('orders-consumer', repeat('s', 128), 1) AS longest_stream;

-- Counted in inbox.stats as claims of messages are: a next position as applied when its
-- transaction commits (not when it rolls back), a duplicate at once, a gap not at all; a batch
-- counts each position.
SELECT inbox.stats_reset();
CREATE VIEW stream_counts AS
SELECT consumer, applied, duplicates FROM inbox.stats WHERE consumer = 'counted';
SELECT inbox.claim_position('counted', 'c/0', 1) AS next, inbox.claim_position('counted', 'c/0', 1) AS duplicate;
BEGIN;
SELECT inbox.claim_position('counted', 'c/0', 2) AS next_rolled_back;
SELECT * FROM stream_counts;
ROLLBACK;
SELECT inbox.claim_position('counted', 'c/1', 2, true) AS gap;
SELECT * FROM stream_counts;
SELECT inbox.claim_positions('counted', 'c/0', ARRAY[0, 1, 2, 3, 3]) AS batch;
SELECT inbox.claim_positions('counted', 'c/1', ARRAY[1, 2, 4], true) AS contiguous_batch;
SELECT * FROM stream_counts;
DROP VIEW stream_counts;

-- A stream retired (a topic deleted, an aggregate archived) loses its position, waiting for a
-- claim in flight; its next claim starts it afresh. An unknown stream or consumer: false.
SELECT inbox.retire_stream('counted', 'c/0') AS retired, inbox.retire_stream('counted', 'c/0') AS again,
       inbox.retire_stream('nobody', 'c/0') AS unknown_consumer;
SELECT inbox.stream_position('counted', 'c/0') AS no_position,
       inbox.claim_position('counted', 'c/0', 0) AS afresh;
BEGIN;
SELECT inbox.retire_stream('counted', 'c/0') AS retired_rolled_back;
ROLLBACK;
SELECT inbox.stream_position('counted', 'c/0') AS kept;
SELECT outcome($$SELECT inbox.retire_stream('counted', NULL)$$) AS null_stream,
       outcome($$SELECT inbox.retire_stream(NULL, 'c/0')$$) AS null_consumer;
BEGIN READ ONLY;
SELECT outcome($$SELECT inbox.retire_stream('counted', 'c/0')$$) AS read_only;
ROLLBACK;

-- A stream costs its row: the consumer's id, the position, the time and the name.
SELECT pg_column_size(s.*) AS row_bytes FROM inbox.stream_positions s
JOIN inbox.consumer_registry r ON r.id = s.consumer_id
WHERE r.name = 'orders-consumer' AND s.stream = 'orders/0';

DROP TABLE ledger;
DELETE FROM inbox.stream_positions;

-- A move that does not fit on its row's page (no HOT update: the page is full of other streams)
-- gives the new version its entry in the key: the claims that follow find it there.
VACUUM inbox.stream_positions;
SELECT count(*) AS filled FROM (
    SELECT inbox.claim_position('paged', 'p/' || g, 1) FROM generate_series(1, 200) g) claims;
BEGIN;
SELECT inbox.claim_position('paged', 'p/1', 2) AS next;
SELECT pg_stat_get_xact_tuples_updated('inbox.stream_positions'::regclass)
       - pg_stat_get_xact_tuples_hot_updated('inbox.stream_positions'::regclass) AS moved_off_page;
COMMIT;
SET enable_seqscan = off;
SELECT inbox.claim_position('paged', 'p/1', 2) AS duplicate,
       inbox.claim_position('paged', 'p/1', 3) AS next;
SELECT count(*) AS rows, max(position) AS position FROM inbox.stream_positions WHERE stream = 'p/1';
RESET enable_seqscan;
DELETE FROM inbox.stream_positions;

-- stream_position over many streams, where the planner would scan in parallel: evaluated in the
-- leader, never in a parallel plan (it reads with a snapshot of its own, which PostgreSQL
-- refuses in parallel mode).
SELECT inbox.claim_position('resumer', 'orders/7', 41) AS next;
CREATE TABLE partitions AS SELECT 'orders/' || g AS stream FROM generate_series(0, 9999) g;
ANALYZE partitions;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT stream, inbox.stream_position('resumer', stream) AS position FROM partitions
WHERE inbox.stream_position('resumer', stream) IS NOT NULL;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE partitions;
DELETE FROM inbox.stream_positions;
