-- What the owner of the markers may add to inbox.markers acts on claims as it would on the
-- owner's own INSERT ... ON CONFLICT DO NOTHING: triggers fire, row-level security checks the
-- row, added indexes are kept. And it stops acting once removed.

-- A trigger fires on each new marker; one that skips the row leaves no marker.
CREATE TABLE marker_log (consumer_id int2, at_level text);
CREATE FUNCTION log_marker() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.marker_log VALUES (NEW.consumer_id, TG_LEVEL);
    RETURN NEW;
END $$;
CREATE TRIGGER log_marker AFTER INSERT ON inbox.markers FOR EACH ROW EXECUTE FUNCTION log_marker();
SELECT inbox.claim('triggered', 't-1') AS first, inbox.claim('triggered', 't-1') AS again;
SELECT at_level, count(*) FROM marker_log GROUP BY at_level;
DROP TRIGGER log_marker ON inbox.markers;
SELECT inbox.claim('triggered', 't-2') AS untriggered;
SELECT count(*) AS logged FROM marker_log;

CREATE FUNCTION skip_marker() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
CREATE TRIGGER skip_marker BEFORE INSERT ON inbox.markers FOR EACH ROW EXECUTE FUNCTION skip_marker();
SELECT inbox.claim('triggered', 't-3') AS skipped_claim;
SELECT count(*) AS markers_t3 FROM inbox.messages WHERE message_id = 't-3';
DROP TRIGGER skip_marker ON inbox.markers;
SELECT inbox.claim('triggered', 't-3') AS kept_claim;
SELECT count(*) AS markers_t3 FROM inbox.messages WHERE message_id = 't-3';

-- Row-level security binds an owner only when forced, and superusers never: the store's tables
-- are given to an ordinary role for the test.
CREATE ROLE regress_marker_owner;
GRANT USAGE ON SCHEMA inbox TO regress_marker_owner;
ALTER TABLE inbox.markers OWNER TO regress_marker_owner;
ALTER TABLE inbox.marker_details OWNER TO regress_marker_owner;
ALTER TABLE inbox.consumer_registry OWNER TO regress_marker_owner;
SELECT inbox.claim('secured', 's-1') AS owned_by_a_role;
ALTER TABLE inbox.markers ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY only_reads ON inbox.markers FOR SELECT USING (true);
SELECT inbox.claim('secured', 's-2') AS no_insert_policy;
CREATE POLICY inserts_of_one ON inbox.markers FOR INSERT
    WITH CHECK (consumer_id = (SELECT id FROM inbox.consumer_registry WHERE name = 'secured'));
SELECT inbox.claim('secured', 's-2') AS insert_policy, inbox.claim('secured', 's-2') AS again;
SELECT inbox.claim('unsecured', 's-2') AS other_consumer;
DROP POLICY only_reads ON inbox.markers;
DROP POLICY inserts_of_one ON inbox.markers;
ALTER TABLE inbox.markers DISABLE ROW LEVEL SECURITY, NO FORCE ROW LEVEL SECURITY;
SELECT inbox.claim('unsecured', 's-2') AS without_policies;

-- The owner's privileges are those of the statement: checked on every claim.
REVOKE INSERT ON inbox.markers FROM regress_marker_owner;
SELECT inbox.claim('secured', 's-3') AS without_insert;
GRANT INSERT ON inbox.markers TO regress_marker_owner;
SELECT inbox.claim('secured', 's-3') AS with_insert;
ALTER TABLE inbox.markers OWNER TO CURRENT_USER;
ALTER TABLE inbox.marker_details OWNER TO CURRENT_USER;
ALTER TABLE inbox.consumer_registry OWNER TO CURRENT_USER;
REVOKE USAGE ON SCHEMA inbox FROM regress_marker_owner;
DROP ROLE regress_marker_owner;

-- A partial expression index added to the markers gets the entries of new markers.
CREATE INDEX long_keys ON inbox.markers ((length(message_key))) WHERE length(message_key) > 100;
SELECT inbox.claim('indexed', repeat('k', 120)) AS long_key, inbox.claim('indexed', 'short') AS short_key;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM inbox.markers WHERE length(message_key) > 100;
SELECT count(*) AS long_keys FROM inbox.markers WHERE length(message_key) > 100;
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP INDEX inbox.long_keys;

-- A unique index besides the primary key: a marker it refuses is an error, as for the statement.
-- (The markers above go first: two consumers claimed s-2, which the index could not take.)
DELETE FROM inbox.messages;
CREATE UNIQUE INDEX one_consumer_per_key ON inbox.markers (message_key);
SELECT inbox.claim('unique', 'u-1') AS first_consumer;
SELECT inbox.claim('unique too', 'u-1') AS second_consumer;
DROP INDEX inbox.one_consumer_per_key;
SELECT inbox.claim('unique too', 'u-1') AS second_consumer;

-- A claim's marker is seen by what follows it in the same function and transaction.
DO $$
BEGIN
    IF NOT inbox.claim('followed', 'f-1') THEN
        RAISE EXCEPTION 'f-1 was new';
    END IF;
    RAISE NOTICE 'marker seen at once: %',
        EXISTS (SELECT FROM inbox.messages WHERE consumer = 'followed' AND message_id = 'f-1');
    RAISE NOTICE 'claimed again: %', inbox.claim('followed', 'f-1');
END $$;

-- Under REPEATABLE READ, a marker of the transaction itself is a duplicate, not a serialization
-- failure.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT inbox.claim('repeatable', 'r-1') AS first;
SELECT inbox.claim('repeatable', 'r-1') AS again;
COMMIT;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
DROP TABLE marker_log;
DROP FUNCTION log_marker();
DROP FUNCTION skip_marker();
