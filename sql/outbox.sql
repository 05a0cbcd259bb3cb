-- The outbox (docs/outbox.md): inbox.send writes in the caller's transaction, a relay leases,
-- delivers and settles with relay_take, relay_done, relay_failed and relay_release.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
CREATE FUNCTION outbox_states() RETURNS TABLE (destination text, key text, state text,
                                               attempts integer, last_error text)
LANGUAGE sql AS $$
    SELECT o.destination, o.key, o.state, o.attempts, o.last_error
    FROM inbox.outbox o LEFT JOIN inbox.outbox_messages m USING (id)
    ORDER BY m.ordinal, o.created_at  -- the delivered ones last, in send order
$$;

-- A send returns the message's id; the message is pending with no attempt yet.
SELECT inbox.send('orders', '{"order": 1}') IS NOT NULL AS sent;
SELECT * FROM outbox_states();
SELECT pending, leased, dead, oldest_pending_at IS NOT NULL AS has_oldest,
       oldest_pending_age >= interval '0' AS has_age
FROM inbox.outbox_stats;

-- The ids grow with time (UUIDv7: version 7, the send's milliseconds in front).
SELECT substr(id::text, 15, 1) AS version,
       abs(('x' || lpad(replace(substr(id::text, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
           - extract(epoch FROM clock_timestamp()) * 1000) < 60000 AS milliseconds_now
FROM inbox.send('orders', '{"order": 2}') id;
-- Their random part (the 74 bits after the milliseconds) differs from one id to the next, also
-- past the buffer of strong random bytes that the library fills for 409 ids at a time.
SELECT count(DISTINCT substr(replace(id::text, '-', ''), 13)) AS distinct_random_parts
FROM (SELECT inbox.send('orders', '{}') FROM generate_series(1, 2000)) sent (id);
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- A rollback sends nothing; a subtransaction rolled back takes its messages with it.
BEGIN;
SELECT inbox.send('orders', '{"order": 5}') IS NOT NULL AS sent;
ROLLBACK;
BEGIN;
SELECT inbox.send('orders', '{"order": 6}') IS NOT NULL AS sent;
SAVEPOINT s;
SELECT inbox.send('orders', '{"order": 7}') IS NOT NULL AS sent;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT payload FROM inbox.outbox_messages ORDER BY ordinal;

-- The relay takes it with its id, key, headers and payload, as attempt 1; it is leased until
-- done; the next take finds nothing.
SELECT inbox.send('invoices', '{"invoice": 9}', 'customer-1', '{"type": "InvoiceIssued"}')
    IS NOT NULL AS sent;
SELECT inbox.send_bytes('invoices', '\x00ff') IS NOT NULL AS sent;
SELECT destination, key, headers, payload, attempt, payload_bytes
FROM inbox.relay_take('relay-1', 10);
SELECT * FROM outbox_states();
SELECT pending, leased FROM inbox.outbox_stats;
SELECT count(*) AS taken_again FROM inbox.relay_take('relay-2');
SELECT leased_by, not_before > now() AS lease_ends_later FROM inbox.outbox WHERE state = 'leased'
ORDER BY 1 LIMIT 1;
SELECT inbox.relay_done(array_agg(id)) AS done FROM inbox.outbox WHERE state = 'leased';
SELECT inbox.relay_done(array_agg(id)) AS done_again FROM inbox.outbox;
-- Delivered, they left the table of undelivered messages for the record of delivered ones.
SELECT (SELECT count(*) FROM inbox.outbox_messages) AS undelivered,
       (SELECT count(*) FROM inbox.outbox_delivered) AS delivered;
SELECT state, count(*), count(delivered_at) AS with_delivered_at FROM inbox.outbox GROUP BY 1 ORDER BY 1;
SELECT pending, leased, dead, oldest_pending_at, oldest_pending_age FROM inbox.outbox_stats;
SELECT count(*) AS taken_after_done FROM inbox.relay_take('relay-1');
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- Destinations filter what a relay takes, in whatever collation the relay passes them (the
-- table's are in "C", byte for byte).
SELECT inbox.send('a', '1') IS NOT NULL AS sent, inbox.send('b', '2') IS NOT NULL AS sent,
       inbox.send('c', '3') IS NOT NULL AS sent;
SELECT destination FROM inbox.relay_take('relay-b', destinations => ARRAY['b']);
SELECT destination FROM inbox.relay_take('relay-c', destinations => ARRAY['c' COLLATE "POSIX"]);
SELECT destination FROM inbox.relay_take('relay-any');
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- Send order, and one message of a key at a time: the second of key k waits for the first,
-- messages of other keys and without a key do not.
SELECT inbox.send('d', '"k-1"', 'k') IS NOT NULL, inbox.send('d', '"k-2"', 'k') IS NOT NULL,
       inbox.send('d', '"j-1"', 'j') IS NOT NULL, inbox.send('d', '"none"') IS NOT NULL,
       inbox.send('e', '"other destination, key k"', 'k') IS NOT NULL;
SELECT payload FROM inbox.relay_take('relay-1', 10);
SELECT count(*) AS nothing_more FROM inbox.relay_take('relay-2', 10);
SELECT inbox.relay_done(array_agg(id)) FROM inbox.outbox
WHERE key = 'k' AND destination = 'd' AND state = 'leased';
SELECT payload FROM inbox.relay_take('relay-2', 10);
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- Failed: taken again after the delay, as the next attempt, with the error kept; dead when
-- taken inbox.outbox_max_attempts times; a dead message does not hold its key back; released,
-- it is pending again with fresh attempts, at the head of its key.
SET inbox.outbox_max_attempts = 2;
SELECT inbox.send('p', '"first"', 'k') IS NOT NULL, inbox.send('p', '"second"', 'k') IS NOT NULL;
SELECT payload, attempt FROM inbox.relay_take('relay-1');
SELECT inbox.relay_failed(array_agg(id), 'connection refused', '1 hour') FROM inbox.outbox
WHERE state = 'leased';
SELECT count(*) AS before_the_delay FROM inbox.relay_take('relay-1');
SELECT * FROM outbox_states();
UPDATE inbox.outbox_messages SET not_before = now() - interval '1 second';  -- the hour passes
SELECT payload, attempt FROM inbox.relay_take('relay-1');
SELECT inbox.relay_failed(array_agg(id), 'exchange not found', '0') FROM inbox.outbox
WHERE state = 'leased';
SELECT * FROM outbox_states();
SELECT pending, dead FROM inbox.outbox_stats;
SELECT inbox.relay_failed(array_agg(id), 'again', '0') AS failed_when_dead FROM inbox.outbox
WHERE state = 'dead';
SELECT payload, attempt FROM inbox.relay_take('relay-1');
SELECT inbox.relay_release(array_agg(id)) AS released FROM inbox.outbox WHERE state <> 'delivered';
SELECT * FROM outbox_states();
SELECT payload, attempt FROM inbox.relay_take('relay-1');
SELECT inbox.relay_done(array_agg(id)) FROM inbox.outbox WHERE state = 'leased';
SELECT payload, attempt FROM inbox.relay_take('relay-1');
RESET inbox.outbox_max_attempts;
SELECT inbox.relay_done(array_agg(id)) FROM inbox.outbox WHERE state = 'leased';
SELECT * FROM outbox_states();
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- An expired lease: the next relay that asks takes the message, as its next attempt.
SELECT inbox.send('q', '"slow"', 'k') IS NOT NULL AS sent;
SELECT attempt FROM inbox.relay_take('relay-1', lease => '1 millisecond');
SELECT pg_sleep(0.01);
SELECT attempt FROM inbox.relay_take('relay-2');
SELECT leased_by, state FROM inbox.outbox;
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- A message whose lease expired inbox.outbox_max_attempts times (every relay that took it died
-- before settling it) is dead at the next take, which leases the next message of its key.
SET inbox.outbox_max_attempts = 2;
SELECT inbox.send('q', '"crashes its relay"', 'k') IS NOT NULL,
       inbox.send('q', '"next"', 'k') IS NOT NULL;
SELECT payload, attempt FROM inbox.relay_take('relay-1', lease => '1 millisecond');
SELECT pg_sleep(0.01);
SELECT payload, attempt FROM inbox.relay_take('relay-2', lease => '1 millisecond');
SELECT pg_sleep(0.01);
SELECT payload, attempt FROM inbox.relay_take('relay-3');
SELECT payload, attempt FROM inbox.relay_take('relay-3');
SELECT state, attempts, last_error FROM inbox.outbox ORDER BY created_at, state;
RESET inbox.outbox_max_attempts;
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- A failure's error is kept to its first 1,000 characters; one without an error (NULL) keeps
-- none.
SELECT count(inbox.send('d', to_jsonb(g))) FROM generate_series(1, 2) g;
SELECT count(*) AS taken FROM inbox.relay_take('r');
SELECT inbox.relay_failed(array_agg(id), repeat('e', 2000)) AS failed FROM inbox.outbox_messages;
SELECT inbox.relay_failed(array_agg(id), NULL) AS failed FROM inbox.outbox_messages
WHERE payload = '2';
SELECT payload, attempts, length(last_error) AS kept FROM inbox.outbox_messages ORDER BY payload;
DELETE FROM inbox.outbox_messages;

-- Bad input: a clear error with its SQLSTATE, and nothing written.
\set VERBOSITY sqlstate
SELECT inbox.send(NULL, '{}');
SELECT inbox.send('', '{}');
SELECT inbox.send(repeat('d', 256), '{}');
SELECT inbox.send('d', '{}', '');
SELECT inbox.send('d', '{}', repeat('k', 256));
SELECT inbox.send('d', NULL::jsonb);
SELECT inbox.send_bytes('d', NULL);
SELECT inbox.send('d', '{}', NULL, '[1]');
SELECT * FROM inbox.relay_take(NULL);
SELECT * FROM inbox.relay_take('');
SELECT * FROM inbox.relay_take('r', 0);
SELECT * FROM inbox.relay_take('r', 10, '0');
SELECT inbox.relay_done(NULL);
SELECT inbox.relay_failed(NULL, 'e');
SELECT inbox.relay_failed('{}', 'e', '-1 second');
SELECT inbox.relay_release(NULL);
SET inbox.outbox_max_attempts = 0;
BEGIN READ ONLY;
SELECT inbox.send('d', '{}');
ROLLBACK;
\set VERBOSITY default
SELECT inbox.send(NULL, '{}');
SELECT inbox.send('d', '{}', '');
SELECT inbox.send('d', NULL::jsonb);
BEGIN READ ONLY;
SELECT inbox.send('d', '{}');
ROLLBACK;
SELECT count(*) AS written FROM inbox.outbox_messages;

-- Privileges: nothing for PUBLIC; 'consume' may send (never write the table itself), 'relay'
-- may take and settle (never change a message), 'monitor' reads the views (no payloads).
CREATE ROLE regress_outbox_app;
CREATE ROLE regress_outbox_relay;
CREATE ROLE regress_outbox_monitor;
GRANT USAGE ON SCHEMA inbox TO regress_outbox_app;
SET ROLE regress_outbox_app;
SELECT inbox.send('d', '{}');
RESET ROLE;
SELECT inbox.grant_access('regress_outbox_app', 'consume'),
       inbox.grant_access('regress_outbox_relay', 'relay'),
       inbox.grant_access('regress_outbox_monitor', 'monitor');
SELECT inbox.grant_access('regress_outbox_app', 'send');
SET ROLE regress_outbox_app;
SELECT inbox.send('d', '"from the app"', 'k') IS NOT NULL AS sent,
       inbox.send_bytes('d', '\x01') IS NOT NULL AS sent_bytes;
SELECT count(*) FROM inbox.outbox_messages;
INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, id, destination, payload)
VALUES (0, now(), now(), gen_random_uuid(), 'd', '"forged"');
SELECT count(*) FROM inbox.relay_take('app');
SELECT count(*) FROM inbox.outbox;
RESET ROLE;
SET ROLE regress_outbox_relay;
SELECT payload, payload_bytes, attempt FROM inbox.relay_take('relay-1', lease => '1 millisecond');
UPDATE inbox.outbox_messages SET payload = '"changed"';
SELECT inbox.send('d', '{}');
SELECT pg_sleep(0.01);
SET inbox.outbox_max_attempts = 2;
SELECT inbox.relay_failed(array_agg(id), 'down', '0') AS failed FROM inbox.relay_take('relay-1');
RESET inbox.outbox_max_attempts;
RESET ROLE;
SELECT array_agg(id) AS dead_ids FROM inbox.outbox WHERE state = 'dead' \gset
SET ROLE regress_outbox_relay;
SELECT inbox.relay_release(:'dead_ids') AS released;
SELECT inbox.relay_done(array_agg(id)) AS done FROM inbox.relay_take('relay-1', 1);
RESET ROLE;
SET ROLE regress_outbox_monitor;
SELECT destination, state FROM inbox.outbox ORDER BY key NULLS LAST;
SELECT pending FROM inbox.outbox_stats;
SELECT count(*) FROM inbox.outbox_messages;
SELECT count(*) FROM inbox.outbox_delivered;
SELECT count(*) FROM inbox.relay_take('monitor');
RESET ROLE;
-- 'relay' includes relay_failed's form with the relay's name (inbox-relay's).
SET ROLE regress_outbox_relay;
SELECT inbox.relay_failed('{}', 'e', '0', 'relay-1') AS named_form;
RESET ROLE;
-- The relay's functions check first that this is no Citus worker node: nothing to refuse on one
-- node; not for PUBLIC.
SELECT inbox.relay_on_coordinator('inbox.relay_take()');
SELECT has_function_privilege('public', 'inbox.relay_on_coordinator(text)', 'EXECUTE')
    AS public_may_call;
DROP OWNED BY regress_outbox_app, regress_outbox_relay, regress_outbox_monitor;
DROP ROLE regress_outbox_app, regress_outbox_relay, regress_outbox_monitor;

-- The outgoing messages are user data: pg_dump dumps the tables and the sequence.
SELECT c::regclass AS dumped FROM pg_extension e, unnest(e.extconfig) c
WHERE e.extname = 'inbox' AND c::regclass::text LIKE 'inbox.outbox%' ORDER BY 1;
-- The relay's two indexes beside the primary key, and only the primary key of the delivered.
SELECT indexrelid::regclass AS index, pg_get_expr(indpred, indrelid) AS over
FROM pg_index WHERE indrelid IN ('inbox.outbox_messages'::regclass,
                                 'inbox.outbox_delivered'::regclass)
ORDER BY 1;
-- The destination and the key compare byte for byte (the index of each key's head is placed
-- with memcmp at every send, not with the database's collation); the relay's name as any text.
SELECT a.attrelid::regclass AS relation, attname, collname
FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
WHERE attrelid IN ('inbox.outbox_messages'::regclass, 'inbox.outbox_delivered'::regclass)
  AND attname IN ('destination', 'key', 'leased_by')
ORDER BY 1, attnum;

-- inbox.send writes a message without an SQL statement into the table as the extension creates
-- it; what a statement would do besides (a trigger, a CHECK constraint, row-level security added
-- to the table) it still does, and the indexes have its entries whichever way it was written.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
CREATE TABLE regress_outbox_seen (destination text);
CREATE FUNCTION regress_outbox_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO regress_outbox_seen VALUES (NEW.destination);
    RETURN NEW;
END $$;
CREATE TRIGGER regress_outbox_note BEFORE INSERT ON inbox.outbox_messages
    FOR EACH ROW EXECUTE FUNCTION regress_outbox_note();
SELECT inbox.send('with trigger', '{}', 'k') IS NOT NULL AS sent;
DROP TRIGGER regress_outbox_note ON inbox.outbox_messages;
SELECT inbox.send('without trigger', '{}', 'k') IS NOT NULL AS sent;
SELECT * FROM regress_outbox_seen;
ALTER TABLE inbox.outbox_messages ADD CONSTRAINT regress_outbox_no_spam
    CHECK (destination <> 'spam');
\set VERBOSITY sqlstate
SELECT inbox.send('spam', '{}');
\set VERBOSITY default
SELECT inbox.send('ham', '{}') IS NOT NULL AS sent;
ALTER TABLE inbox.outbox_messages DROP CONSTRAINT regress_outbox_no_spam;
SELECT inbox.send('spam', '{}') IS NOT NULL AS sent_without_the_constraint;
SET enable_seqscan = off;
SELECT destination, key FROM inbox.outbox_messages
WHERE destination IN ('with trigger', 'without trigger') AND key = 'k'
ORDER BY destination;
SELECT destination FROM inbox.outbox_messages ORDER BY ordinal;
RESET enable_seqscan;
DROP TABLE regress_outbox_seen;
DROP FUNCTION regress_outbox_note();
-- A send keeps what opening the indexes builds (src/pg/kept_indexes.hpp), and follows the
-- table's: an index added after sends (here over an expression, for keyed messages) has the
-- entries of the sends after it, one dropped is no longer opened; every index has an entry for
-- each of its rows (amcheck).
CREATE EXTENSION amcheck;
CREATE FUNCTION outbox_indexes_check() RETURNS TABLE (index regclass, checked boolean)
LANGUAGE sql AS $$
    SELECT i.indexrelid::regclass, bt_index_check(i.indexrelid, true) IS NOT NULL
    FROM pg_index i WHERE i.indrelid = 'inbox.outbox_messages'::regclass ORDER BY 1
$$;
SELECT inbox.send('before the index', '{}', 'k') IS NOT NULL AS sent;
CREATE INDEX regress_outbox_upper ON inbox.outbox_messages (upper(destination))
    WHERE key IS NOT NULL;
SELECT inbox.send('with the index', '{}', 'k') IS NOT NULL AS sent,
       inbox.send('with the index, no key', '{}') IS NOT NULL AS sent;
SELECT * FROM outbox_indexes_check();
DROP INDEX inbox.regress_outbox_upper;
SELECT inbox.send('after the drop', '{}', 'k') IS NOT NULL AS sent;
SELECT * FROM outbox_indexes_check();
DROP FUNCTION outbox_indexes_check();
DROP EXTENSION amcheck;

DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
DROP FUNCTION outbox_states();
