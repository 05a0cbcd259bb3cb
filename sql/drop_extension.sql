-- DROP EXTENSION inbox would delete every marker, the record of which messages were processed:
-- it is refused while there are markers, unless the session says it means it, whichever
-- statement drops it (DROP EXTENSION, DROP SCHEMA ... CASCADE, DROP OWNED BY its owner, the
-- drop of an extension it depends on). Created again,
-- the extension grants nothing; inbox.grant_access gives each kind of role its privileges back.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
SELECT inbox.stats_reset();
CREATE ROLE regress_drop_app;
CREATE ROLE regress_drop_ops;
CREATE ROLE regress_drop_monitoring;
CREATE ROLE regress_drop_owner SUPERUSER;

-- Without markers there is nothing to lose.
SELECT count(*) AS markers FROM inbox.markers;
DROP EXTENSION inbox;
-- Created again by a role of its own, schema included: its DROP OWNED is one more way of
-- dropping it.
DROP SCHEMA inbox;
SET ROLE regress_drop_owner;
CREATE EXTENSION inbox;
RESET ROLE;

-- With markers: refused, whichever way the drop is asked for, and nothing is dropped.
SELECT inbox.claim('drop-billing', 'm-1'), inbox.claim('drop-shipping', 'm-1');
DROP EXTENSION inbox;
DROP EXTENSION IF EXISTS inbox CASCADE;
DROP SCHEMA inbox CASCADE;
-- Statements that drop it without naming it meet the guard when its markers table is deleted:
-- DROP OWNED BY the extension's owner, and the drop of an extension it depends on (the NOTICE
-- listing every object that cascade would drop is left out).
DROP OWNED BY regress_drop_owner;
SET client_min_messages = warning;
DROP EXTENSION plpgsql CASCADE;
RESET client_min_messages;
-- Without CASCADE the schema cannot go anyway: PostgreSQL's own error.
DROP SCHEMA inbox;
-- Other extensions and schemas are none of the guard's business.
CREATE SCHEMA drop_other;
DROP SCHEMA drop_other CASCADE;
SELECT consumer, message_id FROM inbox.messages ORDER BY consumer;

-- The session says it means it; a rollback still brings everything back.
BEGIN;
SET LOCAL inbox.allow_drop_with_markers = on;
DROP EXTENSION inbox;
ROLLBACK;
SELECT count(*) AS markers_after_rollback FROM inbox.messages;
-- DROP OWNED BY its owner then drops it, and its schema.
SET inbox.allow_drop_with_markers = on;
DROP OWNED BY regress_drop_owner;
RESET inbox.allow_drop_with_markers;
SELECT count(*) AS extensions, (SELECT count(*) FROM pg_namespace WHERE nspname = 'inbox') AS schemas
FROM pg_extension WHERE extname = 'inbox';
CREATE EXTENSION inbox;
SELECT count(*) AS markers FROM inbox.messages;

-- Undelivered outgoing messages are committed work no other service has received: refused too
-- (dead ones included); delivered ones do not hold the drop back.
SELECT inbox.send('drop-orders', '"pending"') IS NOT NULL AS sent,
       inbox.send('drop-orders', '"delivered"') IS NOT NULL AS sent;
SELECT inbox.relay_done(array_agg(id)) AS delivered FROM inbox.outbox_messages
WHERE payload = '"delivered"';
DROP EXTENSION inbox;
DROP SCHEMA inbox CASCADE;
SELECT inbox.relay_done(array_agg(id)) AS delivered FROM inbox.outbox_messages;

-- A stream's position records how far it was processed: refused too, for either way of
-- dropping; deleted, the drop goes through.
SELECT inbox.claim_position('drop-stream', 'orders/0', 41) AS claimed;
DROP EXTENSION inbox;
DROP SCHEMA inbox CASCADE;
DELETE FROM inbox.stream_positions;
DROP EXTENSION inbox;
CREATE EXTENSION inbox;

-- Created again, nothing is granted; grant_access gives each kind of role what it needs, and
-- only that.
SELECT has_function_privilege('regress_drop_app', 'inbox.claim(text, text)', 'EXECUTE') AS app_may_claim;
SELECT inbox.grant_access('regress_drop_app', 'consume');
SELECT inbox.grant_access('regress_drop_ops', 'operate');
SELECT inbox.grant_access('regress_drop_monitoring', 'monitor');
CREATE FUNCTION drop_handler(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
GRANT EXECUTE ON FUNCTION drop_handler(jsonb) TO regress_drop_app;

SET ROLE regress_drop_app;
SELECT inbox.claim('drop-billing', 'm-1') AS claim,
       (inbox.receive('drop-billing', 'm-2')).outcome AS receive,
       inbox.apply('drop-billing', 'm-3', 'drop_handler(jsonb)') AS apply;
SELECT array_agg(id) AS claim_batch FROM inbox.claim_batch('drop-billing', ARRAY['m-4', 'm-1']) id;
SELECT outcome FROM inbox.apply_batch('drop-billing', 'drop_handler(jsonb)', '[{"id": "m-5"}]');
SELECT outcome('SELECT inbox.forget(''drop-billing'', ''m-1'')') AS forget;
SELECT outcome('SELECT count(*) FROM inbox.stats') AS stats;
RESET ROLE;

SET ROLE regress_drop_ops;
SELECT inbox.forget('drop-billing', 'm-1') AS forget;
SELECT inbox.configure_consumer('drop-billing', max_attempts => 5);
CALL inbox.purge();
SELECT outcome('SELECT inbox.claim(''drop-billing'', ''m-9'')') AS claim;
RESET ROLE;

SET ROLE regress_drop_monitoring;
SELECT consumer, applied, duplicates FROM inbox.stats WHERE consumer LIKE 'drop-%' ORDER BY consumer;
SELECT (SELECT count(*) FROM inbox.workers) >= 0 AS workers,
       (SELECT count(*) FROM inbox.attempts) >= 0 AS attempts,
       (SELECT max_attempts FROM inbox.consumers WHERE consumer = 'drop-billing') AS max_attempts;
SELECT outcome('SELECT inbox.claim(''drop-billing'', ''m-9'')') AS claim;
RESET ROLE;

-- Bad input: an error with a hint, and nothing granted.
SELECT outcome($$SELECT inbox.grant_access('regress_drop_app', 'admin')$$);
SELECT outcome($$SELECT inbox.grant_access(NULL, 'consume')$$);
SELECT outcome($$SELECT inbox.grant_access('regress_drop_app', NULL)$$);

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages WHERE consumer LIKE 'drop-%';
DROP FUNCTION drop_handler(jsonb);
DROP OWNED BY regress_drop_app, regress_drop_ops, regress_drop_monitoring;
DROP ROLE regress_drop_app, regress_drop_ops, regress_drop_monitoring, regress_drop_owner;
SELECT inbox.stats_reset();
