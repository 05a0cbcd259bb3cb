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
SELECT inbox.claim_position('accounts', 'account-42', 0, true) AS below_the_first;
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

-- A stream costs its row: the consumer's id, the position, the time and the name.
SELECT pg_column_size(s.*) AS row_bytes FROM inbox.stream_positions s
JOIN inbox.consumer_registry r ON r.id = s.consumer_id
WHERE r.name = 'orders-consumer' AND s.stream = 'orders/0';

DROP TABLE ledger;
DELETE FROM inbox.stream_positions;
