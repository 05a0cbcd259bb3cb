-- What may be added to inbox.stream_positions acts on claims of positions as on the statements
-- of the store's owner: triggers fire, CHECK constraints and unique indexes refuse what they
-- refuse, the owner's privileges are checked; and it stops acting once removed. A claim answers
-- the same through the statements as through the direct claim (direct_position_claim.hpp).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql

-- Every kind of claim, single and batch, contiguous or not; then the positions reached.
CREATE FUNCTION claim_sequence(consumer text) RETURNS text LANGUAGE sql AS $$
SELECT concat_ws(' ',
    inbox.claim_position(consumer, 's/0', 5), inbox.claim_position(consumer, 's/0', 6),
    inbox.claim_position(consumer, 's/0', 6), inbox.claim_position(consumer, 's/0', 3),
    inbox.claim_position(consumer, 's/1', 2, true), inbox.claim_position(consumer, 's/1', 1, true),
    inbox.claim_position(consumer, 's/1', 3, true), inbox.claim_position(consumer, 's/1', 2, true),
    inbox.claim_position(consumer, 's/1', 2, true),
    inbox.claim_positions(consumer, 's/0', ARRAY[5, 8, 7])::text,
    inbox.claim_positions(consumer, 's/2', ARRAY[2, 1, 4], true)::text,
    inbox.claim_positions(consumer, 's/2', ARRAY[2, 3, 4], true)::text,
    inbox.claim_positions(consumer, 's/3', ARRAY[]::bigint[])::text,
    inbox.claim_positions(consumer, 's/3', ARRAY[2, 3], true)::text,
    '/', inbox.stream_position(consumer, 's/0'), inbox.stream_position(consumer, 's/1'),
    inbox.stream_position(consumer, 's/2'), inbox.stream_position(consumer, 's/3'))
$$;

-- A trigger fires on each row a claim writes (which only the statements do); the answers are
-- those of the direct claim.
CREATE TABLE position_log (id serial, stream text, operation text, position bigint);
CREATE FUNCTION log_position() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.position_log (stream, operation, position)
    VALUES (NEW.stream, TG_OP, NEW.position);
    RETURN NEW;
END $$;
SELECT claim_sequence('direct') AS direct;
CREATE TRIGGER log_position AFTER INSERT OR UPDATE ON inbox.stream_positions
    FOR EACH ROW EXECUTE FUNCTION log_position();
SELECT claim_sequence('statements') AS statements;
SELECT stream, operation, position FROM position_log ORDER BY id;
DROP TRIGGER log_position ON inbox.stream_positions;
SELECT inbox.claim_position('statements', 's/0', 9) AS untriggered;
SELECT count(*) AS logged FROM position_log;

-- A CHECK constraint refuses a position it does not allow, as the statements' error.
ALTER TABLE inbox.stream_positions ADD CONSTRAINT below_a_million CHECK (position < 1000000);
SELECT outcome($$SELECT inbox.claim_position('checked', 'c/0', 1000000)$$) AS refused,
       inbox.claim_position('checked', 'c/0', 999999) AS allowed;
ALTER TABLE inbox.stream_positions DROP CONSTRAINT below_a_million;
SELECT inbox.claim_position('checked', 'c/0', 1000000) AS unchecked;

-- A unique index besides the primary key: a row it refuses is an error, as for the statements.
DELETE FROM inbox.stream_positions;
CREATE UNIQUE INDEX one_consumer_per_stream ON inbox.stream_positions (stream);
SELECT inbox.claim_position('unique', 'u/0', 1) AS first_consumer,
       outcome($$SELECT inbox.claim_position('unique too', 'u/0', 1)$$) AS second_consumer;
DROP INDEX inbox.one_consumer_per_stream;
SELECT inbox.claim_position('unique too', 'u/0', 1) AS second_consumer;

-- The claims act as the owner of the markers (the store's owner): its privileges on the
-- positions' table are those the statements need (SELECT, INSERT, UPDATE), checked on every claim.
CREATE ROLE regress_store_owner;
GRANT USAGE ON SCHEMA inbox TO regress_store_owner;
ALTER TABLE inbox.markers OWNER TO regress_store_owner;
ALTER TABLE inbox.marker_details OWNER TO regress_store_owner;
ALTER TABLE inbox.consumer_registry OWNER TO regress_store_owner;
SELECT outcome($$SELECT inbox.claim_position('owned', 'o/0', 1)$$) AS no_privilege;
GRANT SELECT, INSERT ON inbox.stream_positions TO regress_store_owner;
SELECT outcome($$SELECT inbox.claim_position('owned', 'o/0', 1)$$) AS without_update;
GRANT UPDATE ON inbox.stream_positions TO regress_store_owner;
SELECT inbox.claim_position('owned', 'o/0', 1) AS first, inbox.claim_position('owned', 'o/0', 2) AS next;
REVOKE ALL ON inbox.stream_positions FROM regress_store_owner;
SELECT outcome($$SELECT inbox.claim_position('owned', 'o/0', 3)$$) AS revoked;
ALTER TABLE inbox.markers OWNER TO CURRENT_USER;
ALTER TABLE inbox.marker_details OWNER TO CURRENT_USER;
ALTER TABLE inbox.consumer_registry OWNER TO CURRENT_USER;
REVOKE USAGE ON SCHEMA inbox FROM regress_store_owner;
DROP ROLE regress_store_owner;

-- Under SERIALIZABLE the statements claim: their reads take the predicate locks that let
-- PostgreSQL find a dangerous structure.
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT inbox.claim_position('serial', 'z/0', 1, true) AS first,
       inbox.claim_position('serial', 'z/0', 2, true) AS next;
SELECT count(*) > 0 AS predicate_locks FROM pg_locks
WHERE mode = 'SIReadLock' AND pid = pg_backend_pid()
  AND relation IN ('inbox.stream_positions'::regclass, 'inbox.stream_positions_pkey'::regclass);
COMMIT;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.stream_positions;
DELETE FROM inbox.messages;
DROP TABLE position_log;
DROP FUNCTION log_position();
DROP FUNCTION claim_sequence(text);
