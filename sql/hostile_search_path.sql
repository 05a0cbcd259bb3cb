-- Every SQL object of the extension under a hostile search_path. A database owner, with no
-- privilege on the markers, shadows pg_catalog with a schema of his own: a look-alike of every
-- function, aggregate, operator and base type, case-insensitive collations "C" and "POSIX", and
-- tables named as the extension's (test/regress/shadow_catalog.sql). He puts it before pg_catalog
-- in the database's search_path. Every answer stays right, and none of his objects is called.
-- The calls under the hostile path name nothing themselves (no function, operator or type of
-- their own), and the views are read whole and looked at afterwards: what is called is the
-- extension's doing. The counters read below are this file's alone.
\getenv abs_srcdir PG_ABS_SRCDIR
SELECT inbox.stats_reset();
CREATE ROLE regress_hostile_owner;
CREATE SCHEMA shadow AUTHORIZATION regress_hostile_owner;
SET ROLE regress_hostile_owner;
\i :abs_srcdir/test/regress/shadow_catalog.sql
RESET ROLE;
SELECT count(*) FILTER (WHERE prokind = 'f') > 3000 AS functions,
       count(*) FILTER (WHERE prokind = 'a') > 100 AS aggregates,
       (SELECT count(*) > 700 FROM pg_operator WHERE oprnamespace = 'shadow'::regnamespace) AS operators,
       (SELECT count(*) > 50 FROM pg_type WHERE typnamespace = 'shadow'::regnamespace
                                           AND typtype = 'd') AS types
FROM pg_proc WHERE pronamespace = 'shadow'::regnamespace;
DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I SET search_path = shadow, pg_catalog', current_database());
END $$;

-- Markers to find, forget and purge, written before the hostile path applies: consumers that a
-- case-insensitive "C" would take for one another, the capitalized one registered first.
SET search_path = pg_catalog;
INSERT INTO inbox.messages (consumer, message_id, processed_at) VALUES
    ('Billing', 'msg-1', now()), ('billing', 'msg-1', now()), ('billing', 'MSG-1', now()),
    ('billing', 'Msg-1', now()),
    ('A', 'old-1', now() - interval '2 hours'), ('a', 'old-1', now() - interval '2 hours'),
    ('b', 'old-1', now() - interval '2 hours'), ('b', 'fresh-1', now());
CREATE TABLE public.prices (sku text PRIMARY KEY, amount numeric, version bigint);
CREATE TABLE public.tags (id int PRIMARY KEY, labels text[], version int);
CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
CREATE FUNCTION public.decline(payload jsonb) RETURNS void LANGUAGE plpgsql
    SET search_path = pg_catalog
    AS $$ BEGIN RAISE EXCEPTION 'declined' USING ERRCODE = 'P0001'; END $$;

-- A statement built and kept under a harmless search_path is planned again under the hostile
-- one (here the session's own).
SELECT inbox.upsert_versioned('public.tags', '{"id": 2, "labels": ["x"], "version": 1}') AS kept;
SET search_path = shadow, pg_catalog;
SELECT inbox.upsert_versioned('public.tags', '{"id": 2, "labels": ["y"], "version": 2}') AS replanned;
SET search_path = pg_catalog;

-- A new session: every kept statement is prepared under the hostile path.
\c -
SHOW search_path;
-- claim, apply, forget: forget removes exactly (billing, msg-1), not MSG-1 nor Msg-1, nor
-- consumer Billing's.
SELECT inbox.claim('billing', 'msg-2') AS new, inbox.claim('billing', 'MSG-1') AS duplicate;
SELECT inbox.apply('billing', 'msg-3', 'public.noop(pg_catalog.jsonb)', '{}') AS applied;
SELECT inbox.forget('billing', 'msg-1') AS forgotten;
SELECT inbox.forget('billing', 'msg-1') AS forgotten_again;
-- receive and complete: a fingerprint, a stored result, a mismatch, no wait.
SELECT * FROM inbox.receive('billing', 'req-1', '{"amount": 1}');
SELECT inbox.complete('billing', 'req-1', '{"status": 201}');
SELECT * FROM inbox.receive('billing', 'req-1', '{"amount": 1}');
SELECT * FROM inbox.receive('billing', 'req-1', '{"amount": 2}');
SELECT * FROM inbox.receive('billing', 'req-2', wait => false);
-- The batches.
SELECT * FROM inbox.claim_batch('billing', ARRAY['b-2', 'b-1', 'b-2', 'MSG-1', 'Msg-1']);
SELECT * FROM inbox.apply_batch('billing', 'public.noop(pg_catalog.jsonb)',
                                '[{"id": "ab-1", "payload": {}}, {"id": "msg-2"}]');
-- A consumer's own settings; a failed attempt; the limit.
SELECT inbox.configure_consumer('Billing', '2 days', 2);
SELECT * FROM inbox.apply_batch('Billing', 'public.decline(pg_catalog.jsonb)', '[{"id": "f-1"}]');
SELECT * FROM inbox.apply_batch('Billing', 'public.decline(pg_catalog.jsonb)', '[{"id": "f-1"}]');
SELECT * FROM inbox.receive('Billing', 'f-1');
-- The owner's own writes through inbox.messages (times to come, which the purge leaves).
INSERT INTO inbox.messages (consumer, message_id, processed_at)
VALUES ('written', 'w-1', '2099-01-01 00:00:00+00'), ('written', 'w-2', '2099-01-01 00:00:00+00');
UPDATE inbox.messages SET processed_at = '2099-06-01 00:00:00+00'
WHERE message_id OPERATOR(pg_catalog.=) 'w-1';
DELETE FROM inbox.messages WHERE message_id OPERATOR(pg_catalog.=) 'w-2';
-- The purge: a's and A's expired markers go, b's fresh one stays.
SET inbox.retention = '1h';
CALL inbox.purge();
RESET inbox.retention;
-- Natural idempotency, with typed parameters and with a json row.
SELECT upsert, insert_once FROM (SELECT
    inbox.upsert_versioned('public.prices', '{"sku": "s-1", "amount": 5, "version": 2}') AS upsert,
    inbox.insert_once('public.tags', '{"id": 1, "labels": ["x"], "version": 1}') AS insert_once) r;
SELECT inbox.upsert_versioned('public.prices', '{"sku": "s-1", "amount": 9, "version": 1}') AS stale;
SELECT inbox.upsert_versioned('public.tags', '{"id": 1, "labels": ["y"], "version": 2}') AS newer;
-- The views, read whole.
CREATE TEMPORARY TABLE stats_seen AS SELECT * FROM inbox.stats;
CREATE TEMPORARY TABLE consumers_seen AS SELECT * FROM inbox.consumers;
CREATE TEMPORARY TABLE attempts_seen AS SELECT * FROM inbox.attempts;
CREATE TEMPORARY TABLE messages_seen AS SELECT * FROM inbox.messages;
CREATE TEMPORARY TABLE workers_seen AS SELECT * FROM inbox.workers;
SELECT inbox.stats_reset();
-- The drop guard finds the markers left here with pg_catalog's names, and refuses; grant_access
-- grants under a search_path of its own.
DROP EXTENSION inbox;
CREATE ROLE regress_hostile_app;
SELECT inbox.grant_access('regress_hostile_app', 'consume');

-- What is left, read with pg_catalog's own names.
SET search_path = pg_catalog;
CREATE TEMPORARY TABLE consumers_here (consumer) AS
VALUES ('A'), ('a'), ('b'), ('Billing'), ('billing'), ('written');
SELECT consumer, applied, duplicates, payload_mismatches, poisoned, retained,
       oldest_processed_at IS NOT NULL AS has_oldest
FROM stats_seen JOIN consumers_here USING (consumer) ORDER BY consumer COLLATE "C";
SELECT consumer, retention, max_attempts
FROM consumers_seen JOIN consumers_here USING (consumer) ORDER BY consumer COLLATE "C";
SELECT consumer, message_id, failures, last_sqlstate
FROM attempts_seen JOIN consumers_here USING (consumer) WHERE message_id = 'f-1';
SELECT consumer, message_id, CASE WHEN processed_at > now() THEN processed_at END AS written
FROM messages_seen JOIN consumers_here USING (consumer)
ORDER BY consumer COLLATE "C", message_id COLLATE "C";
SELECT * FROM public.prices;
SELECT * FROM public.tags;
SELECT has_function_privilege('regress_hostile_app', 'inbox.claim_batch(text, text[])', 'EXECUTE')
    AS granted;
SELECT what AS hostile_object_called FROM shadow.calls;
-- The control: the same kind of names, written without their schema under the hostile path,
-- do reach the look-alikes, so the empty list above is the extension's doing.
SET search_path = shadow, pg_catalog;
SELECT now() IS NULL AS shadowed_now, 'a'::text = 'b'::text AS shadowed_equality,
       count(*) AS shadowed_count FROM (VALUES (1)) AS v(x);
SET search_path = pg_catalog;
SELECT what AS hostile_object_called FROM shadow.calls ORDER BY what COLLATE "C";

DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I RESET search_path', current_database());
END $$;
\c -
SELECT inbox.forget('Billing', 'f-1'), inbox.forget('billing', 'req-1'),
       inbox.configure_consumer('Billing');
DELETE FROM inbox.messages;
DROP TABLE public.prices, public.tags;
DROP FUNCTION public.noop(jsonb), public.decline(jsonb);
SET client_min_messages = warning;
DROP SCHEMA shadow CASCADE;
RESET client_min_messages;
DROP ROLE regress_hostile_owner;
DROP OWNED BY regress_hostile_app;
DROP ROLE regress_hostile_app;
