-- Retention settings and CALL inbox.purge().
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql

-- Defaults, with units.
SHOW inbox.retention;
SHOW inbox.purge_batch_size;
SHOW inbox.purge_interval;
SHOW inbox.purge_worker;
SHOW inbox.purge_log_level;

-- Out of range or malformed: 22023, and the setting keeps its value.
SELECT statement, outcome(statement) FROM (VALUES
    ($$SET inbox.retention = 0$$),
    ($$SET inbox.retention = '0s'$$),
    ($$SET inbox.retention = '-1d'$$),
    ($$SET inbox.retention = '100000d'$$),
    ($$SET inbox.retention = 'forever'$$),
    ($$SET inbox.retention = '30 days'$$),
    ($$SET inbox.purge_batch_size = 0$$),
    ($$SET inbox.purge_batch_size = 1000001$$),
    ($$SET inbox.purge_interval = '50ms'$$),
    ($$SET inbox.purge_interval = '2d'$$),
    ($$SET inbox.purge_worker = 'sometimes'$$),
    ($$SET inbox.purge_log_level = 'warning'$$),
    ($$SET inbox.no_such_setting = 1$$)
) AS bad(statement);
SHOW inbox.retention;

-- inbox.retention says what was wrong and how to write it: a bare number (which PostgreSQL's
-- time settings read in their base unit: 30 would be 30 seconds, not days), less than a second
-- (which whole seconds would round to 0), a unit PostgreSQL does not know.
SET inbox.retention = 30;
SET inbox.retention = '500ms';
SET inbox.retention = '30 days';

-- In range, with any unit.
SET inbox.retention = '36h';
SHOW inbox.retention;
SET inbox.retention = '1500 ms';
SHOW inbox.retention;
SET inbox.purge_interval = '100ms';
SHOW inbox.purge_interval;
SET inbox.purge_log_level = debug1;
SHOW inbox.purge_log_level;
RESET ALL;

-- Each value replaced, rolled back or reset frees the parsed form the check made of it, with
-- PostgreSQL's own allocator from 16 on: hundreds of replacements leave the session working.
SELECT count(set_config('inbox.retention', i || 'h', false)) FROM generate_series(1, 200) AS i;
SHOW inbox.retention;
BEGIN;
SET LOCAL inbox.retention = '2d';
SET inbox.retention = '3d';
ROLLBACK;
SHOW inbox.retention;
RESET inbox.retention;
SET inbox.retention = '4d';
RESET inbox.retention;
SHOW inbox.retention;

-- Who may change them: an ordinary role can pick the batch size of its own purge, nothing else:
-- 42501 for the retention, the interval and the worker switch, in SET and ALTER ROLE alike.
CREATE ROLE regress_purge_user LOGIN;
SET ROLE regress_purge_user;
SELECT statement, outcome(statement) FROM (VALUES
    ($$SET inbox.retention = '1s'$$),
    ($$SET inbox.purge_interval = '1s'$$),
    ($$SET inbox.purge_worker = off$$),
    ($$SET inbox.purge_log_level = debug1$$),
    ($$SET inbox.purge_batch_size = 10$$),
    ($$ALTER ROLE regress_purge_user SET inbox.retention = '1s'$$)
) AS attempt(statement);
RESET ROLE;
SHOW inbox.retention;

-- A superuser can give a database and a role their own values.
ALTER ROLE regress_purge_user SET inbox.retention = '1d';
SELECT setconfig FROM pg_db_role_setting
WHERE setrole = 'regress_purge_user'::regrole;
-- A role's own value decides what that role's purge deletes for every consumer of the
-- database, where the workers keep the database's: the purge says so. (A value the session
-- sets itself, as below, is the caller's explicit choice and goes without a warning.)
SELECT current_user AS superuser \gset
GRANT USAGE ON SCHEMA inbox TO regress_purge_user;
GRANT EXECUTE ON PROCEDURE inbox.purge(bigint) TO regress_purge_user;
\c - regress_purge_user
CALL inbox.purge();
\c - :superuser
ALTER ROLE regress_purge_user RESET inbox.retention;
REVOKE ALL ON SCHEMA inbox FROM regress_purge_user;
REVOKE ALL ON PROCEDURE inbox.purge(bigint) FROM regress_purge_user;

-- The purge. A trigger on the marker store records the transaction of every deletion, to count
-- the transactions (the ids here are plain text, stored as their bytes).
CREATE TABLE purge_log (txid bigint, consumer text, message_id text);
CREATE FUNCTION log_purge() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.purge_log
    SELECT pg_catalog.txid_current(), r.name, pg_catalog.convert_from(OLD.message_key, 'UTF8')
    FROM inbox.consumer_registry r WHERE r.id = OLD.consumer_id;
    RETURN OLD;
END $$;
CREATE TRIGGER log_purge AFTER DELETE ON inbox.markers FOR EACH ROW EXECUTE FUNCTION log_purge();

CREATE PROCEDURE expire_markers() LANGUAGE sql AS $$
    DELETE FROM inbox.messages;
    TRUNCATE purge_log;
    -- 7 expired markers of "billing", 4 of "shipping", and 3 fresh ones of each. The expired
    -- ones in the first seconds of one 256-second bucket, so that the batches are the same
    -- whenever the test runs.
    INSERT INTO inbox.messages
    SELECT consumer, consumer || '-old-' || i, bucket_start + i * interval '1 s'
    FROM (VALUES ('billing', 7), ('shipping', 4)) AS c(consumer, n), generate_series(1, n) i,
         (SELECT date_trunc('second', now() - interval '2 hours')
                 - (inbox.marker_time_offset(now() - interval '2 hours')::int + 256) % 256
                   * interval '1 s' AS bucket_start) AS b;
    INSERT INTO inbox.messages
    SELECT consumer, consumer || '-new-' || i, now()
    FROM (VALUES ('billing'), ('shipping')) AS c(consumer), generate_series(1, 3) i;
$$;

SET inbox.retention = '1h';
SET inbox.purge_batch_size = 3;

-- Outside a transaction block: 11 deleted, each batch of at most 3 in its own transaction,
-- consumer by consumer, the oldest markers first; the fresh ones stay.
CALL expire_markers();
CALL inbox.purge();
SELECT rank() OVER (ORDER BY txid) AS batch, string_agg(message_id, ' ' ORDER BY message_id)
FROM purge_log GROUP BY txid ORDER BY txid;
SELECT consumer, string_agg(message_id, ' ' ORDER BY message_id) AS remaining
FROM inbox.messages GROUP BY consumer ORDER BY consumer;
-- Nothing left to purge.
CALL inbox.purge();

-- Inside a transaction block: one transaction, the caller's, which decides.
CALL expire_markers();
BEGIN;
CALL inbox.purge();
SELECT count(DISTINCT txid) AS transactions, count(*) AS deleted FROM purge_log;
SELECT count(DISTINCT txid) = 1 AS in_callers_transaction FROM purge_log
WHERE txid = txid_current();
ROLLBACK;
SELECT count(*) AS markers_after_rollback FROM inbox.messages;

-- Called from a function (atomic context): the same, in the caller's transaction.
CREATE FUNCTION purge_from_function() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    CALL inbox.purge(n);
    RETURN n;
END $$;
SELECT purge_from_function() AS deleted;
SELECT count(DISTINCT txid) AS transactions FROM purge_log;

-- The retention decides what is expired: with 3 hours nothing is.
CALL expire_markers();
SET inbox.retention = '3h';
CALL inbox.purge();
RESET inbox.retention;

-- An ordinary role needs EXECUTE on the procedure, never rights on the table.
SET ROLE regress_purge_user;
SELECT outcome('CALL inbox.purge()');
RESET ROLE;
GRANT USAGE ON SCHEMA inbox TO regress_purge_user;
GRANT EXECUTE ON PROCEDURE inbox.purge(bigint) TO regress_purge_user;
SET inbox.retention = '1h';
SET ROLE regress_purge_user;
CALL inbox.purge();
SELECT outcome('SELECT count(*) FROM inbox.messages');
RESET ROLE;

-- The boundary. The cutoff is now() - inbox.retention, now() being the start of the purge's
-- (here: the caller's) transaction; a marker keeps its time in whole seconds. One whose second
-- lies entirely before the cutoff goes; one in the cutoff's own second stays, since it may have
-- been processed after the cutoff: a marker never goes early, and at most a second late.
BEGIN;
DELETE FROM inbox.messages;
SET LOCAL inbox.retention = '1h';
INSERT INTO inbox.messages VALUES
    ('boundary', 'in-the-cutoffs-second', date_trunc('second', now() - interval '1 hour')),
    ('boundary', 'the-second-before', date_trunc('second', now() - interval '1 hour') - interval '1 s');
CALL inbox.purge();
SELECT message_id FROM inbox.messages WHERE consumer = 'boundary';
ROLLBACK;

-- Each consumer's own retention (inbox.configure_consumer) against inbox.retention (1 hour
-- here): "keeper" keeps its markers 3 hours, "hasty" 10 minutes, "plain" follows the default.
-- Markers 2 hours and 30 minutes old, 5 of each age in one second, more than a batch of 3
-- takes; a payload's fingerprint kept beside each marker goes with it.
BEGIN;
DELETE FROM inbox.messages;
SET LOCAL inbox.retention = '1h';
SET LOCAL inbox.purge_batch_size = 3;
SELECT inbox.configure_consumer('keeper', '3 hours'), inbox.configure_consumer('hasty', '10 min');
INSERT INTO inbox.messages
SELECT c, c || '/' || age || '/' || i, date_trunc('second', now()) - age::interval
FROM unnest(ARRAY['keeper', 'hasty', 'plain']) c, unnest(ARRAY['2 hours', '30 min']) age,
     generate_series(1, 5) i;
INSERT INTO inbox.marker_details (time_bucket, consumer_id, time_offset, message_key, fingerprint)
SELECT m.time_bucket, m.consumer_id, m.time_offset, m.message_key, 42 FROM inbox.markers m;
CALL inbox.purge();
SELECT r.name AS consumer, count(m.*) AS markers,
       string_agg(DISTINCT split_part(m.message_id, '/', 2), ', ') AS ages_kept,
       (SELECT count(*) FROM inbox.marker_details d WHERE d.consumer_id = r.id) AS details
FROM inbox.consumer_registry r LEFT JOIN inbox.messages m ON m.consumer = r.name
WHERE r.name IN ('keeper', 'hasty', 'plain') GROUP BY r.id, r.name ORDER BY r.name;
-- inbox.consumers shows each window, NULL for inbox.retention. Its retention reset (a
-- configure_consumer that names no setting changes none), "keeper" follows inbox.retention
-- again: its 2-hour-old markers go with the next purge.
SELECT consumer, retention, max_attempts FROM inbox.consumers
WHERE consumer IN ('keeper', 'hasty', 'plain') ORDER BY consumer;
SELECT inbox.configure_consumer('keeper');
SELECT consumer, retention FROM inbox.consumers WHERE consumer = 'keeper';
SELECT inbox.reset_consumer('keeper', 'retention');
SELECT consumer, retention, max_attempts FROM inbox.consumers WHERE consumer = 'keeper';
-- (log_purge reads ids as their bytes, which keeper's 16-byte ids are not stored as.)
ALTER TABLE inbox.markers DISABLE TRIGGER log_purge;
CALL inbox.purge();
SELECT string_agg(DISTINCT split_part(message_id, '/', 2), ', ') AS keeper_ages_kept
FROM inbox.messages WHERE consumer = 'keeper';
ROLLBACK;

-- No data the tables can hold stops the purge: a consumer longer than the functions allow (the
-- owner wrote it, say in a migration), an empty one and one whose id is below those the registry
-- hands out are purged like any other, and the purge ends.
DELETE FROM inbox.messages;
INSERT INTO inbox.consumer_registry (id, name) VALUES (-32768, 'lowest-id'), (-1, 'id-minus-one');
INSERT INTO inbox.messages
SELECT consumer, consumer || '-old-' || i, now() - interval '2 hours'
FROM (VALUES (repeat('long', 40)), (''), ('zzz'), ('lowest-id'), ('id-minus-one')) AS c(consumer),
     generate_series(1, 4) i;
SET inbox.retention = '1h';
SET inbox.purge_batch_size = 3;
SET statement_timeout = '20s';
CALL inbox.purge();
RESET statement_timeout;
SELECT count(*) AS left_behind FROM inbox.messages;
RESET inbox.purge_batch_size;
ALTER TABLE inbox.consumer_registry DISABLE TRIGGER keep_consumer_ids;
DELETE FROM inbox.consumer_registry WHERE id < 0;
ALTER TABLE inbox.consumer_registry ENABLE TRIGGER keep_consumer_ids;

DROP TRIGGER log_purge ON inbox.markers;
DROP TABLE purge_log;
DROP FUNCTION log_purge(), purge_from_function();
DROP PROCEDURE expire_markers();
DELETE FROM inbox.messages;
RESET ALL;

-- The statements on the markers run as the table's owner inside a security-restricted
-- operation: a trigger someone added to the table cannot create temporary objects (or change
-- session state) there, whether reached through claim, forget or the purge.
CREATE FUNCTION make_temp_table() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    CREATE TEMPORARY TABLE IF NOT EXISTS planted (x int);
    RETURN NULL;
END $$;
CREATE TRIGGER make_temp_table AFTER INSERT OR DELETE ON inbox.markers
    FOR EACH ROW EXECUTE FUNCTION make_temp_table();
SELECT outcome($$SELECT inbox.claim('restricted', 'r-1')$$) AS claim;
ALTER TABLE inbox.markers DISABLE TRIGGER make_temp_table;
SELECT inbox.claim('restricted', 'r-1'), inbox.claim('restricted', 'r-2');
UPDATE inbox.messages SET processed_at = now() - interval '2 hours' WHERE message_id = 'r-2';
ALTER TABLE inbox.markers ENABLE TRIGGER make_temp_table;
SELECT outcome($$SELECT inbox.forget('restricted', 'r-1')$$) AS forget;
SET inbox.retention = '1h';
SELECT outcome('CALL inbox.purge()') AS purge;
RESET inbox.retention;
SELECT message_id FROM inbox.messages WHERE consumer = 'restricted' ORDER BY message_id;
SELECT count(*) AS planted_tables FROM pg_class WHERE relname = 'planted';
DROP TRIGGER make_temp_table ON inbox.markers;
DROP FUNCTION make_temp_table();
DELETE FROM inbox.messages;

-- pg_cron is not installed here: a clear error, nothing scheduled.
SELECT outcome($$SELECT inbox.schedule_purge()$$);
SELECT outcome($$SELECT inbox.schedule_purge(NULL)$$);
SELECT outcome($$SELECT inbox.unschedule_purge()$$);

-- inbox.workers: a row per database served (see the TAP tests for the workers themselves);
-- like everything else of the extension, not open to PUBLIC.
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'inbox.workers'::regclass AND attnum > 0 ORDER BY attnum;
SET ROLE regress_purge_user;
SELECT outcome('SELECT * FROM inbox.workers');
RESET ROLE;

DROP OWNED BY regress_purge_user;
DROP ROLE regress_purge_user;
