-- Consumer registration (1.2): in the claiming transaction, the lowest free id above the highest,
-- no id burnt by a rollback, a clear error when all ids are taken, and failed attempts that
-- belong to one consumer for ever. Runs last: it empties the store and recreates the extension.
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry;
SELECT inbox.claim('cr-first', 'm-1');

-- Twenty first claims that roll back leave no registration and burn no id.
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        BEGIN
            PERFORM inbox.claim('cr-rolled-back-' || i, 'm-1');
            RAISE EXCEPTION 'roll back';
        EXCEPTION WHEN raise_exception THEN
        END;
    END LOOP;
END $$;
SELECT inbox.claim('cr-second', 'm-1');
SELECT id, name FROM inbox.consumer_registry ORDER BY id;

-- The same in top-level transactions.
BEGIN;
SELECT inbox.claim('cr-third', 'm-1');
ROLLBACK;
SELECT inbox.claim('cr-fourth', 'm-1');
SELECT id, name FROM inbox.consumer_registry ORDER BY id;

-- An id left free below the highest (here by the owner) goes to a new consumer once the ids
-- above are taken.
INSERT INTO inbox.consumer_registry (id, name)
SELECT i, 'cr-filler-' || i FROM generate_series(4, 32767) i WHERE i <> 500;
SELECT inbox.claim('cr-in-the-gap', 'm-1');
SELECT id FROM inbox.consumer_registry WHERE name = 'cr-in-the-gap';

-- All ids taken: 54000, nothing written.
SELECT inbox.claim('cr-one-too-many', 'm-1');
\set VERBOSITY sqlstate
SELECT inbox.claim('cr-one-too-many', 'm-1');
SELECT inbox.receive('cr-one-too-many', 'm-1');
SELECT inbox.claim_batch('cr-one-too-many', ARRAY['m-1']);
\set VERBOSITY default
SELECT count(*) AS registered_or_marked
FROM inbox.messages WHERE consumer = 'cr-one-too-many';
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry;

-- An id that a marker carries is never handed out again, even to a consumer registered after the
-- registry lost its rows (a restore whose copy of the registry failed, here a TRUNCATE of the
-- registry alone): a new consumer must not adopt another's markers. Above the highest id a
-- marker carries...
SELECT inbox.claim('cr-lost-1', 'm-1'), inbox.claim('cr-lost-2', 'm-1');
TRUNCATE inbox.consumer_registry;
SELECT inbox.claim('cr-after-loss', 'm-1');
SELECT id, name FROM inbox.consumer_registry ORDER BY id;
-- ...and, once the ids above are taken, none of those below that only markers carry.
INSERT INTO inbox.consumer_registry (id, name)
SELECT i, 'cr-filler-' || i FROM generate_series(4, 32767) i WHERE i <> 600;
SELECT inbox.claim('cr-wrapped', 'm-1');
SELECT id FROM inbox.consumer_registry WHERE name = 'cr-wrapped';
-- Each has the one marker of its own claim, none of another consumer's.
SELECT r.name, count(*) AS markers FROM inbox.markers m JOIN inbox.consumer_registry r
    ON r.id = m.consumer_id WHERE r.name IN ('cr-after-loss', 'cr-wrapped') GROUP BY r.name
ORDER BY r.name;
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry;
-- The same for an id that only a stream's position carries: the new consumer does not adopt the
-- stream.
SELECT inbox.claim_position('cr-streamed', 's/0', 5);
TRUNCATE inbox.consumer_registry;
SELECT inbox.claim('cr-after-stream-loss', 'm-1');
SELECT s.consumer_id, r.name AS registered_as, s.stream, s.position
FROM inbox.stream_positions s LEFT JOIN inbox.consumer_registry r ON r.id = s.consumer_id;
SELECT id, name FROM inbox.consumer_registry ORDER BY id;
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry, inbox.stream_positions;

-- A read-only transaction is refused by every writing function at once, with its own name and
-- 25006.
BEGIN READ ONLY;
SELECT inbox.receive('cr-first', 'm-2');
ROLLBACK;
\set VERBOSITY sqlstate
BEGIN READ ONLY;
SELECT inbox.configure_consumer('cr-first', max_attempts => 3);
ROLLBACK;
BEGIN READ ONLY;
SELECT inbox.claim_batch('cr-first', ARRAY['m-2']);
ROLLBACK;
\set VERBOSITY default

-- Failed attempts belong to one consumer for ever: not to a consumer that takes the same id, nor
-- to one of the same name in a recreated extension.
CREATE FUNCTION cr_decline(payload jsonb) RETURNS void LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'declined' USING ERRCODE = 'P0001'; END $$;
SELECT inbox.configure_consumer('cr-old', max_attempts => 2);
SELECT inbox.apply('cr-old', 'order-17', 'cr_decline(jsonb)');
SELECT inbox.apply('cr-old', 'order-17', 'cr_decline(jsonb)');
SELECT outcome, attempts FROM inbox.receive('cr-old', 'order-17');
-- A new consumer whose first claims all roll back is not registered, yet its failures count.
SELECT inbox.apply('cr-unregistered', 'order-17', 'cr_decline(jsonb)');
SELECT consumer, message_id, failures FROM inbox.attempts
WHERE consumer IN ('cr-old', 'cr-unregistered', 'cr-third') ORDER BY consumer;
SELECT count(*) AS registered FROM inbox.consumers WHERE consumer = 'cr-unregistered';
SET inbox.allow_drop_with_markers = on;
DROP EXTENSION inbox;
CREATE EXTENSION inbox;
RESET inbox.allow_drop_with_markers;
SELECT inbox.configure_consumer('cr-new', max_attempts => 2);
SELECT inbox.configure_consumer('cr-old', max_attempts => 2);
SELECT id, name FROM inbox.consumer_registry ORDER BY id;
SELECT count(*) AS failures_inherited FROM inbox.attempts;
SELECT outcome, attempts FROM inbox.receive('cr-new', 'order-17');
SELECT outcome, attempts FROM inbox.receive('cr-old', 'order-17');
DROP FUNCTION cr_decline(jsonb);
