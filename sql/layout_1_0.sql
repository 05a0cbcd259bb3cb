-- A database still at 1.0 is served by this library until ALTER EXTENSION inbox UPDATE: claim,
-- apply, forget and the purge work on 1.0's table inbox.messages with statements of their own,
-- which hold to the same rules as those of 1.1: every name qualified (here under the hostile
-- search_path of hostile_search_path.sql), the purge cutoff now() - inbox.retention with a
-- marker exactly at the cutoff kept, and no consumer the table can hold stopping the purge.
\getenv abs_srcdir PG_ABS_SRCDIR
SELECT current_database() AS regress_database \gset
CREATE DATABASE regress_inbox_1_0 TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C';
\c regress_inbox_1_0
CREATE EXTENSION inbox VERSION '1.0';
CREATE ROLE regress_hostile_owner_1_0;
CREATE SCHEMA shadow AUTHORIZATION regress_hostile_owner_1_0;
SET ROLE regress_hostile_owner_1_0;
\i :abs_srcdir/test/regress/shadow_catalog.sql
RESET ROLE;
ALTER DATABASE regress_inbox_1_0 SET search_path = shadow, pg_catalog;

-- Markers written before the hostile path applies: consumers that a case-insensitive "C" would
-- take for one another, and expired markers of them, of a consumer longer than the functions
-- accept, of an empty one and of one after them (the owner wrote them, say in a migration).
SET search_path = pg_catalog;
INSERT INTO inbox.messages (consumer, message_id, processed_at) VALUES
    ('Billing', 'msg-1', now()), ('billing', 'msg-1', now()), ('billing', 'MSG-1', now()),
    ('billing', 'Msg-1', now());
INSERT INTO inbox.messages (consumer, message_id, processed_at)
SELECT consumer, 'old-' || i, now() - interval '2 hours'
FROM (VALUES ('Billing'), ('billing'), (repeat('long', 40)), (''), ('zzz')) AS c(consumer),
     generate_series(1, 4) i;
CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
-- Two markers around the cutoff of a purge in the same transaction: exactly at now() - 1 hour,
-- and a microsecond before.
CREATE FUNCTION public.add_markers_at_the_cutoff() RETURNS void LANGUAGE sql
    SET search_path = pg_catalog AS $$
    INSERT INTO inbox.messages (consumer, message_id, processed_at) VALUES
        ('boundary', 'at-the-cutoff', now() - interval '1 hour'),
        ('boundary', 'a-microsecond-before', now() - interval '1 hour' - interval '1 microsecond')
$$;

-- A new session: every statement is prepared under the hostile path.
\c regress_inbox_1_0
SHOW search_path;
SELECT inbox.claim('billing', 'msg-2') AS new, inbox.claim('billing', 'MSG-1') AS duplicate;
SELECT inbox.apply('billing', 'msg-3', 'public.noop(pg_catalog.jsonb)', '{}') AS applied;
-- forget removes exactly (billing, msg-1): not MSG-1 nor Msg-1, nor consumer Billing's.
SELECT inbox.forget('billing', 'msg-1') AS forgotten;
SELECT inbox.forget('billing', 'msg-1') AS forgotten_again;
-- The purge walks every consumer, the long and the empty one too, and ends.
SET inbox.retention = '1h';
SET inbox.purge_batch_size = 3;
SET statement_timeout = '20s';
CALL inbox.purge();
RESET statement_timeout;
RESET inbox.purge_batch_size;
-- The boundary, in one transaction: the cutoff is its now() - 1 hour.
BEGIN;
SELECT public.add_markers_at_the_cutoff();
CALL inbox.purge();
COMMIT;
RESET inbox.retention;
CREATE TEMPORARY TABLE stats_seen AS SELECT * FROM inbox.stats;

-- What is left, read with pg_catalog's own names.
SET search_path = pg_catalog;
SELECT consumer, message_id FROM inbox.messages
ORDER BY consumer COLLATE "C", message_id COLLATE "C";
SELECT consumer, retained FROM stats_seen ORDER BY consumer COLLATE "C";
SELECT what AS hostile_object_called FROM shadow.calls;

\c :regress_database
DROP DATABASE regress_inbox_1_0;
DROP ROLE regress_hostile_owner_1_0;
