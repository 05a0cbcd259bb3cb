-- Every outcome of a delivery: inbox.receive, inbox.complete, inbox.claim_batch,
-- inbox.apply_batch, and the failed attempts of inbox.attempts (the temporary instance preloads
-- the library, which keeps them). Consumers of this file start with "oc-". The concurrent
-- outcomes (in_progress, a copy waiting) are in the isolation specs.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
SELECT inbox.stats_reset();

-- receive: processed the first time, then a duplicate; with a payload its fingerprint is kept,
-- and a copy with another payload is payload_mismatch and writes nothing.
SELECT * FROM inbox.receive('oc-web', 'req-1', '{"amount": 10, "currency": "EUR"}');
SELECT * FROM inbox.receive('oc-web', 'req-1', '{"currency": "EUR", "amount": 10.0}');
SELECT * FROM inbox.receive('oc-web', 'req-1', '{"amount": 11, "currency": "EUR"}');
-- A copy without a payload has nothing to compare: a duplicate.
SELECT * FROM inbox.receive('oc-web', 'req-1');
-- A first delivery without a payload keeps no fingerprint: a later payload is not compared.
SELECT (inbox.receive('oc-web', 'req-2')).outcome, (inbox.receive('oc-web', 'req-2', '{"a": 1}')).outcome;
SELECT count(*) AS details FROM inbox.marker_details;
-- The fingerprint tells apart payloads that PostgreSQL's jsonb hash confuses (it combines parts
-- by XOR and rotation): nesting, an empty object and an empty array, and arrays of 33 elements
-- changed at positions 1 and 33 alike. Scalars, strings and numbers, keys and values differ too.
SELECT first, copy, (inbox.receive('oc-print', 'p-' || n, first)).outcome AS first_outcome,
       (inbox.receive('oc-print', 'p-' || n, copy)).outcome AS copy_outcome
FROM (VALUES (1, '[[1], 2]'::jsonb, '[[1, 2]]'::jsonb),
             (2, '{}', '[]'),
             (3, '"1"', '1'),
             (4, '{"a": "b"}', '["a", "b"]'),
             (5, '{"ab": "c"}', '{"a": "bc"}'),
             (6, '[null]', '[false]'),
             (7, '1', '[1]')) AS payloads(n, first, copy)
ORDER BY n;
SELECT (inbox.receive('oc-print', 'p-33', (SELECT jsonb_agg(CASE WHEN g IN (1, 33) THEN 5 ELSE 0 END) FROM generate_series(1, 33) g))).outcome AS first_outcome,
       (inbox.receive('oc-print', 'p-33', (SELECT jsonb_agg(CASE WHEN g IN (1, 33) THEN 7 ELSE 0 END) FROM generate_series(1, 33) g))).outcome AS copy_outcome;
-- What canonical jsonb makes equal is one payload: key order, whitespace, duplicate keys, the
-- scale of a number.
SELECT (inbox.receive('oc-print', 'p-8', '{"a": [1.50, {"x": null}], "b": 2}')).outcome AS first_outcome,
       (inbox.receive('oc-print', 'p-8', '{ "b" : 2.0, "a" : [1.5, {"x": null}], "b": 2 }')).outcome AS copy_outcome;

-- complete stores the result with the marker, in the caller's transaction: every later copy is
-- answered with it; storing again replaces it.
BEGIN;
SELECT (inbox.receive('oc-web', 'req-3', '{"order": 7}')).outcome;
SELECT inbox.complete('oc-web', 'req-3', '{"status": 201, "order_id": 7}');
COMMIT;
SELECT * FROM inbox.receive('oc-web', 'req-3', '{"order": 7}');
SELECT inbox.complete('oc-web', 'req-3', '{"status": 200, "order_id": 7}');
SELECT result FROM inbox.receive('oc-web', 'req-3');
-- Rolled back, the result goes with the transaction.
BEGIN;
SELECT inbox.complete('oc-web', 'req-3', '{"status": 500}');
ROLLBACK;
SELECT result FROM inbox.receive('oc-web', 'req-3');
-- forget takes the marker, its fingerprint and its result.
SELECT inbox.forget('oc-web', 'req-3');
SELECT outcome, result FROM inbox.receive('oc-web', 'req-3', '{"order": 8}');
-- So does the owner's DELETE through inbox.messages: a later marker of the message inherits
-- neither; the owner's UPDATE of a marker's time keeps them, with the marker's new time.
SELECT inbox.complete('oc-web', 'req-3', '{"status": 201}');
UPDATE inbox.messages SET processed_at = processed_at - interval '1 hour'
WHERE consumer = 'oc-web' AND message_id = 'req-3';
SELECT outcome, result FROM inbox.receive('oc-web', 'req-3', '{"order": 8}');
SELECT outcome, result FROM inbox.receive('oc-web', 'req-3', '{"order": 9}');
SELECT m.processed_at = '2000-01-01 00:00:00+00'::timestamptz
           + ((d.time_bucket::int8 * 256 + (d.time_offset::int4 & 255)) * interval '1 s') AS same_time
FROM inbox.marker_details d
JOIN inbox.consumer_registry r ON r.id = d.consumer_id AND r.name = 'oc-web'
JOIN inbox.messages m ON m.consumer = r.name AND m.message_id = 'req-3'
WHERE d.message_key = inbox.message_key('req-3');
DELETE FROM inbox.messages WHERE consumer = 'oc-web' AND message_id = 'req-3';
SELECT outcome, result FROM inbox.receive('oc-web', 'req-3');
SELECT outcome, result FROM inbox.receive('oc-web', 'req-3', '{"order": 10}');

-- claim_batch: the ids claimed now, each once, in the order given.
SELECT inbox.claim('oc-batch', 'b-3');
SELECT array_agg(id) AS claimed FROM inbox.claim_batch('oc-batch', ARRAY['b-5', 'b-1', 'b-3', 'b-5', 'b-2']) id;
SELECT array_agg(id) AS claimed FROM inbox.claim_batch('oc-batch', ARRAY['b-2', 'b-4']) id;
SELECT count(*) AS claimed FROM inbox.claim_batch('oc-batch', ARRAY[]::text[]);
-- A claim_batch that rolls back keeps none of its markers.
BEGIN;
SELECT array_agg(id) AS claimed FROM inbox.claim_batch('oc-batch', ARRAY['b-6', 'b-7']) id;
ROLLBACK;
SELECT array_agg(id) AS claimed FROM inbox.claim_batch('oc-batch', ARRAY['b-6', 'b-7']) id;

-- apply_batch: each message claimed and handled on its own; a failing handler is rolled back
-- alone (its marker with it) and reported with its SQLSTATE and message.
CREATE TABLE oc_ledger (message_id text PRIMARY KEY, amount int);
CREATE FUNCTION oc_book(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO oc_ledger VALUES (payload ->> 'id', (payload ->> 'amount')::int);
    IF (payload ->> 'amount')::int < 0 THEN
        RAISE EXCEPTION 'negative amount %', payload ->> 'amount' USING ERRCODE = '22003';
    END IF;
END $$;
SELECT * FROM inbox.apply_batch('oc-pay', 'oc_book(jsonb)', '[
    {"id": "p-1", "payload": {"id": "p-1", "amount": 10}},
    {"id": "p-2", "payload": {"id": "p-2", "amount": -5}},
    {"id": "p-1", "payload": {"id": "p-1", "amount": 10}},
    {"id": "p-3", "payload": {"id": "p-3", "amount": 7}}]');
SELECT * FROM oc_ledger ORDER BY message_id;
SELECT message_id FROM inbox.messages WHERE consumer = 'oc-pay' ORDER BY message_id;
-- Delivered again: the processed ones are duplicates, the failed one is tried again.
SELECT * FROM inbox.apply_batch('oc-pay', 'oc_book(jsonb)', '[
    {"id": "p-1", "payload": {"id": "p-1", "amount": 10}},
    {"id": "p-2", "payload": {"id": "p-2", "amount": 5}}]');
SELECT * FROM oc_ledger ORDER BY message_id;
-- A cancel is not a handler's failure: statement_timeout ends the whole batch, which writes
-- nothing (and, rolled back, counts as a failed attempt of each message it claimed, below).
CREATE FUNCTION oc_slow(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(5) $$;
SET statement_timeout = '200ms';
SELECT * FROM inbox.apply_batch('oc-slow', 'oc_slow(jsonb)', '[{"id": "s-1", "payload": {}}]');
RESET statement_timeout;
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'oc-slow';

-- Failed attempts survive the rollback that takes the marker: a claim whose transaction rolls
-- back, a handler of apply that raises (with its SQLSTATE and message), a failed message of a
-- batch. receive reports how many earlier deliveries failed.
BEGIN;
SELECT inbox.claim('oc-retry', 'r-1');
ROLLBACK;
SELECT outcome('SELECT inbox.apply(''oc-retry'', ''r-1'', ''oc_book(jsonb)'', ''{"id": "r-1", "amount": -1}'')');
SELECT * FROM inbox.apply_batch('oc-retry', 'oc_book(jsonb)', '[{"id": "r-1", "payload": {"id": "r-1", "amount": -2}}]');
SELECT consumer, message_id, failures, last_sqlstate, last_message, last_failed_at IS NOT NULL AS stamped
FROM inbox.attempts WHERE consumer LIKE 'oc-%' ORDER BY consumer, message_id;
-- A subtransaction that rolls back is a failed attempt too; one that is released is not.
BEGIN;
SAVEPOINT s;
SELECT inbox.claim('oc-retry', 'r-2');
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
SELECT inbox.claim('oc-retry', 'r-3');
RELEASE SAVEPOINT t;
ROLLBACK;
SELECT message_id, failures FROM inbox.attempts WHERE consumer = 'oc-retry' ORDER BY message_id;
-- inbox.attempts shows each id as it was claimed, whatever its stored form.
BEGIN;
SELECT count(inbox.claim('oc-ids', id)) AS claimed FROM (VALUES ('0b6c5e0e-3f9a-4c1d-9d7e-2a8f4b6c1e53'),
    ('0B6C5E0E-3F9A-4C1D-9D7E-2A8F4B6C1E53'), ('abcdefghijklmnop'), ('é-1')) AS v(id);
ROLLBACK;
SELECT message_id, failures FROM inbox.attempts WHERE consumer = 'oc-ids' ORDER BY message_id;
-- The cause is recorded for the message whose handler raised, even when the handler claimed
-- another message before raising.
CREATE FUNCTION oc_nested(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM inbox.claim('oc-nested', payload ->> 'inner');
    RAISE EXCEPTION 'outer handler failed' USING ERRCODE = '22012';
END $$;
SELECT outcome('SELECT inbox.apply(''oc-outer'', ''o-1'', ''oc_nested(jsonb)'', ''{"inner": "i-1"}'')');
SELECT consumer, message_id, failures, last_sqlstate, last_message FROM inbox.attempts
WHERE consumer IN ('oc-outer', 'oc-nested') ORDER BY consumer;
-- A message that failed before is cleared when it commits, however many messages its
-- transaction claimed before it.
BEGIN;
SELECT count(*) FILTER (WHERE inbox.claim('oc-many', 'many-' || g)) AS claimed FROM generate_series(1, 1500) g;
SELECT inbox.claim('oc-outer', 'o-1') AS claimed;
COMMIT;
SELECT count(*) AS outer_failures FROM inbox.attempts WHERE consumer = 'oc-outer';

-- A limit: after max_attempts failures receive answers poisoned and apply raises IB001, both
-- without running the handler or writing a marker; apply_batch reports it poisoned.
SELECT inbox.configure_consumer('oc-retry', max_attempts => 3);
SELECT * FROM inbox.receive('oc-retry', 'r-1');
SELECT outcome('SELECT inbox.apply(''oc-retry'', ''r-1'', ''oc_book(jsonb)'', ''{"id": "r-1", "amount": 1}'')');
SELECT * FROM inbox.apply_batch('oc-retry', 'oc_book(jsonb)', '[{"id": "r-1", "payload": {"id": "r-1", "amount": 1}}]');
SELECT count(*) AS booked FROM oc_ledger WHERE message_id = 'r-1';
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'oc-retry' AND message_id = 'r-1';
-- Below the limit it is delivered, and its earlier failures are told.
SELECT * FROM inbox.receive('oc-retry', 'r-2');
-- Processed, a message leaves the view; forgotten too.
SELECT message_id, failures FROM inbox.attempts WHERE consumer = 'oc-retry' ORDER BY message_id;
-- forget answers false (no marker went) and says that the failed attempts did.
SELECT inbox.forget('oc-retry', 'r-1');
SELECT message_id, failures FROM inbox.attempts WHERE consumer = 'oc-retry' ORDER BY message_id;
SELECT (inbox.receive('oc-retry', 'r-1')).outcome AS after_forget;
-- The same for a consumer whose every first claim failed, and which is therefore not registered:
-- its failures, kept by its name, go too.
SELECT outcome('SELECT inbox.apply(''oc-never-registered'', ''n-1'', ''oc_book(jsonb)'', ''{"id": "n-1", "amount": -1}'')');
SELECT count(*) AS registered FROM inbox.consumers WHERE consumer = 'oc-never-registered';
SELECT message_id, failures FROM inbox.attempts WHERE consumer = 'oc-never-registered';
SELECT inbox.forget('oc-never-registered', 'n-1');
SELECT count(*) AS failed_messages FROM inbox.attempts WHERE consumer = 'oc-never-registered';

-- inbox.stats counts the answers that write nothing: in_progress (isolation specs),
-- payload_mismatches and poisoned.
SELECT consumer, applied, duplicates, payload_mismatches, poisoned FROM inbox.stats
WHERE consumer LIKE 'oc-%' ORDER BY consumer;

-- Bad input: an error with a SQLSTATE, and nothing written.
CREATE FUNCTION oc_strict(payload jsonb) RETURNS void LANGUAGE sql STRICT AS 'SELECT';
SELECT count(*) AS markers_before FROM inbox.markers \gset
SELECT statement, outcome(statement) FROM (VALUES
    ($$SELECT inbox.receive(NULL, 'm')$$),
    ($$SELECT inbox.receive('oc-bad', '')$$),
    ($$SELECT inbox.receive('oc-bad', 'm', NULL, NULL)$$),
    ($$SELECT inbox.complete('oc-bad', 'never-claimed', '{}')$$),
    ($$SELECT inbox.complete('oc-web', 'req-1', NULL)$$),
    ($$SELECT inbox.claim_batch('oc-bad', NULL)$$),
    ($$SELECT inbox.claim_batch('oc-bad', ARRAY['ok', NULL])$$),
    ($$SELECT inbox.claim_batch('oc-bad', ARRAY['ok', ''])$$),
    ($$SELECT inbox.claim_batch('oc-bad', ARRAY['ok', repeat('x', 129)])$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', NULL)$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', '{"id": "m"}')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', '[{"id": "ok"}, 7]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', '[{"id": "ok"}, {"payload": {}}]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', '[{"id": 5}]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'upper(text)', '[{"id": "ok"}]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', NULL, '[]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_strict(jsonb)', '[{"id": "ok", "payload": {}}, {"id": "no-payload"}]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', '[{"id": "ok"}, {"id": ""}]')$$),
    ($$SELECT inbox.apply_batch('oc-bad', 'oc_book(jsonb)', format('[{"id": "ok"}, {"id": "%s"}]', repeat('x', 129))::jsonb)$$),
    ($$SELECT inbox.receive(repeat('c', 65), 'm')$$),
    ($$SELECT inbox.configure_consumer('oc-bad', '0 s')$$),
    ($$SELECT inbox.configure_consumer('oc-bad', NULL, 0)$$),
    ($$SELECT inbox.configure_consumer(NULL)$$)
) AS bad(statement);
SELECT count(*) - :markers_before AS markers_written FROM inbox.markers;

-- Clean up: each file leaves the database as it found it.
DROP TABLE oc_ledger;
DROP FUNCTION oc_book(jsonb), oc_slow(jsonb), oc_nested(jsonb), oc_strict(jsonb);
SET client_min_messages = warning;
SELECT count(*) AS failed_messages FROM (SELECT inbox.forget(consumer, message_id) FROM inbox.attempts WHERE consumer LIKE 'oc-%') f;
DELETE FROM inbox.messages WHERE consumer LIKE 'oc-%';
SELECT inbox.forget('oc-retry', m) FROM unnest(ARRAY['r-1', 'r-2', 'r-3']) m;
RESET client_min_messages;
SELECT inbox.stats_reset();

-- The outcome labels are kept by the backend from one statement to the next; the extension
-- dropped and created again in the same session has labels of its own, and they are used.
SELECT current_database() AS regress_database \gset
CREATE DATABASE regress_inbox_outcomes;
\c regress_inbox_outcomes
CREATE EXTENSION inbox;
SELECT outcome FROM inbox.receive('oc-again', 'm-1');
SET inbox.allow_drop_with_markers = on;
DROP EXTENSION inbox;
CREATE EXTENSION inbox;
SELECT outcome FROM inbox.receive('oc-again', 'm-1');
SELECT message_id, outcome FROM inbox.apply_batch('oc-again', 'pg_catalog.pg_backend_pid()', '[{"id": "m-1"}, {"id": "m-2"}]');
\c :regress_database
DROP DATABASE regress_inbox_outcomes;
