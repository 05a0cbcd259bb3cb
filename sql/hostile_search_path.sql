-- Every SQL object of the extension under a hostile search_path. A database owner, with no
-- privilege on the markers, shadows pg_catalog's names with objects of his own (a
-- case-insensitive collation "C", operators, functions, an aggregate, a type, a table) and puts
-- his schema before pg_catalog in the database's search_path. Every answer stays right, and none
-- of his objects is ever called.
-- The counters read below are this file's alone.
SELECT inbox.stats_reset();
CREATE ROLE regress_hostile_owner;
CREATE SCHEMA shadow AUTHORIZATION regress_hostile_owner;
SET ROLE regress_hostile_owner;
CREATE TABLE shadow.calls (what text);
GRANT INSERT ON shadow.calls TO PUBLIC;
CREATE FUNCTION shadow.spy(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO shadow.calls VALUES (what);
    RETURN true;
END $$;
CREATE COLLATION shadow."C" (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE FUNCTION shadow.matches(a text, b text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT shadow.spy('text operator') $$;
CREATE OPERATOR shadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.matches);
CREATE OPERATOR shadow.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.matches);
CREATE OPERATOR shadow.< (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.matches);
CREATE OPERATOR shadow.> (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.matches);
CREATE FUNCTION shadow.before(a timestamptz, b timestamptz) RETURNS boolean LANGUAGE sql
    AS $$ SELECT shadow.spy('timestamptz operator') $$;
CREATE OPERATOR shadow.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = shadow.before);
CREATE FUNCTION shadow.now() RETURNS timestamptz LANGUAGE sql
    AS $$ SELECT 'infinity'::pg_catalog.timestamptz WHERE shadow.spy('now') $$;
CREATE FUNCTION shadow.keep_first(state text, value text) RETURNS text LANGUAGE sql
    AS $$ SELECT value WHERE shadow.spy('min') $$;
CREATE AGGREGATE shadow.min(text) (SFUNC = shadow.keep_first, STYPE = text);
CREATE FUNCTION shadow.count() RETURNS bigint LANGUAGE sql AS $$ SELECT 0::bigint WHERE shadow.spy('count') $$;
CREATE FUNCTION shadow.current_setting(text) RETURNS text LANGUAGE sql
    AS $$ SELECT '1' WHERE shadow.spy('current_setting') $$;
CREATE FUNCTION shadow.jsonb_to_record(jsonb) RETURNS record LANGUAGE sql
    AS $$ SELECT NULL::record WHERE shadow.spy('jsonb_to_record') $$;
CREATE DOMAIN shadow.text AS pg_catalog.varchar CHECK (shadow.spy('text domain'));
CREATE TABLE shadow.messages (consumer text, message_id text, processed_at timestamptz);
-- Names the outcomes' statements and views use: keys and ids compared as bytea and smallint,
-- an array of keys unnested, stored keys turned back into text.
CREATE FUNCTION shadow.bytes_match(a bytea, b bytea) RETURNS boolean LANGUAGE sql
    AS $$ SELECT shadow.spy('bytea operator') $$;
CREATE OPERATOR shadow.= (LEFTARG = bytea, RIGHTARG = bytea, FUNCTION = shadow.bytes_match);
CREATE FUNCTION shadow.ids_match(a smallint, b smallint) RETURNS boolean LANGUAGE sql
    AS $$ SELECT shadow.spy('smallint operator') $$;
CREATE OPERATOR shadow.= (LEFTARG = smallint, RIGHTARG = smallint, FUNCTION = shadow.ids_match);
CREATE FUNCTION shadow.unnest(keys bytea[]) RETURNS SETOF bytea LANGUAGE sql
    AS $$ SELECT NULL::bytea WHERE shadow.spy('unnest') $$;
CREATE FUNCTION shadow.length(key bytea) RETURNS integer LANGUAGE sql
    AS $$ SELECT 0 WHERE shadow.spy('length') $$;
CREATE FUNCTION shadow.convert_from(key bytea, encoding name) RETURNS text LANGUAGE sql
    AS $$ SELECT 'hijacked' WHERE shadow.spy('convert_from') $$;
RESET ROLE;
DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I SET search_path = shadow, pg_catalog', current_database());
END $$;

-- Markers to find, forget and purge, written before the hostile path applies.
SET search_path = pg_catalog;
INSERT INTO inbox.messages (consumer, message_id, processed_at) VALUES
    ('billing', 'msg-1', now()), ('billing', 'MSG-1', now()), ('billing', 'Msg-1', now()),
    ('Billing', 'msg-1', now()),
    ('a', 'old-1', now() - interval '2 hours'), ('A', 'old-1', now() - interval '2 hours'),
    ('b', 'old-1', now() - interval '2 hours'), ('b', 'fresh-1', now());
CREATE TABLE public.prices (sku text PRIMARY KEY, amount numeric, version bigint);
CREATE TABLE public.tags (id int PRIMARY KEY, labels text[], version int);

-- A new session: every kept statement is prepared under the hostile path.
\c -
SHOW search_path;
SELECT inbox.claim('billing', 'msg-2') AS new, inbox.claim('billing', 'MSG-1') AS duplicate;
CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
SELECT inbox.apply('billing', 'msg-3', 'public.noop(jsonb)', '{}') AS applied;
-- forget removes exactly (billing, msg-1): not MSG-1 nor Msg-1, nor consumer Billing's.
SELECT inbox.forget('billing', 'msg-1') AS forgotten;
SELECT inbox.forget('billing', 'msg-1') AS forgotten_again;
SET inbox.retention = '1h';
CALL inbox.purge();
RESET inbox.retention;
SELECT upsert, insert_once FROM (SELECT
    inbox.upsert_versioned('public.prices', '{"sku": "s-1", "amount": 5, "version": 2}') AS upsert,
    inbox.insert_once('public.tags', '{"id": 1, "labels": ["x"], "version": 1}') AS insert_once) r;
SELECT inbox.upsert_versioned('public.prices', '{"sku": "s-1", "amount": 9, "version": 1}') AS stale;
SELECT inbox.upsert_versioned('public.tags', '{"id": 1, "labels": ["y"], "version": 2}') AS newer;
-- Every outcome: receive with and without waiting, a mismatching payload, a stored result,
-- a batch claimed and one applied with a failing handler (its failed attempt in inbox.attempts).
SELECT (inbox.receive('hostile', 'r-1', '{"a": 1}')).outcome AS received,
       (inbox.receive('hostile', 'r-1', '{"a": 2}')).outcome AS other_payload;
SELECT inbox.complete('hostile', 'r-1', '{"status": 201}');
SELECT * FROM inbox.receive('hostile', 'r-1', '{"a": 1}', wait => false);
SELECT * FROM inbox.claim_batch('hostile', ARRAY['b-2', 'b-1', 'b-2']);
CREATE FUNCTION public.refuse_odd(payload jsonb) RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog AS $$
BEGIN
    IF (payload ->> 'n')::int % 2 = 1 THEN
        RAISE EXCEPTION 'odd' USING ERRCODE = '22023';
    END IF;
END $$;
SELECT * FROM inbox.apply_batch('hostile', 'public.refuse_odd(jsonb)',
    '[{"id": "a-1", "payload": {"n": 1}}, {"id": "a-2", "payload": {"n": 2}}]');
-- The views are read whole here (a WHERE clause of this file's own would be resolved through
-- the hostile path) and looked at below.
CREATE TEMPORARY TABLE attempts_seen AS SELECT * FROM inbox.attempts;
CREATE TEMPORARY TABLE stats_seen AS SELECT * FROM inbox.stats;
CREATE TEMPORARY TABLE workers_seen AS SELECT * FROM inbox.workers;
SELECT inbox.stats_reset();

-- What is left, read with pg_catalog's own names.
SET search_path = pg_catalog;
SELECT consumer, applied, duplicates, retained, oldest_processed_at IS NOT NULL AS has_oldest
FROM stats_seen WHERE consumer IN ('billing', 'Billing', 'a', 'A', 'b') ORDER BY consumer COLLATE "C";
SELECT consumer, applied, duplicates, payload_mismatches FROM stats_seen WHERE consumer = 'hostile';
SELECT consumer, message_id, failures, last_sqlstate, last_message FROM attempts_seen
WHERE consumer = 'hostile';
SELECT consumer, message_id FROM inbox.messages
WHERE consumer IN ('billing', 'Billing', 'a', 'A', 'b', 'hostile') ORDER BY consumer COLLATE "C", message_id COLLATE "C";
SELECT * FROM public.prices;
SELECT * FROM public.tags;
SELECT what AS hostile_object_called FROM shadow.calls;

DO $$ BEGIN
    EXECUTE format('ALTER DATABASE %I RESET search_path', current_database());
END $$;
\c -
DELETE FROM inbox.messages WHERE consumer IN ('billing', 'Billing', 'a', 'A', 'b', 'hostile');
SELECT inbox.forget('hostile', 'a-1');
DROP TABLE public.prices, public.tags;
DROP FUNCTION public.noop(jsonb), public.refuse_odd(jsonb);
DROP SCHEMA shadow CASCADE;
DROP ROLE regress_hostile_owner;
