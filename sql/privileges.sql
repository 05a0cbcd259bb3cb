-- An application role needs USAGE on the schema and EXECUTE on the functions it calls; it can
-- never touch the markers directly, and handlers run with its own rights.
CREATE ROLE regress_inbox_app;
CREATE TABLE ledger (entry text, written_by name);
GRANT SELECT, INSERT ON ledger TO regress_inbox_app;
CREATE FUNCTION record_entry(payload jsonb) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO ledger VALUES (payload ->> 'entry', current_user) $$;
CREATE FUNCTION privileged_handler(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
REVOKE EXECUTE ON FUNCTION privileged_handler(jsonb) FROM PUBLIC;

-- Nothing of the extension is usable by PUBLIC out of the box.
SET ROLE regress_inbox_app;
SELECT inbox.claim('app', 'x');
RESET ROLE;

GRANT USAGE ON SCHEMA inbox TO regress_inbox_app;
SET ROLE regress_inbox_app;
SELECT inbox.claim('app', 'x');
RESET ROLE;

GRANT EXECUTE ON FUNCTION inbox.claim(text, text),
                          inbox.apply(text, text, regprocedure, jsonb) TO regress_inbox_app;
SET ROLE regress_inbox_app;
SELECT inbox.claim('app', 'x') AS first, inbox.claim('app', 'x') AS again;
SELECT inbox.apply('app', 'y', 'record_entry(jsonb)', '{"entry": "e-1"}');
SELECT entry, written_by FROM ledger;

-- The handler must be executable by the caller: apply checks it like a direct call would.
SELECT inbox.apply('app', 'z', 'privileged_handler(jsonb)');

-- Markers cannot be read, changed or deleted directly, nor forgotten without a grant.
SELECT count(*) FROM inbox.messages;
INSERT INTO inbox.messages (consumer, message_id) VALUES ('app', 'forged');
UPDATE inbox.messages SET processed_at = now();
DELETE FROM inbox.messages;
SELECT inbox.forget('app', 'x');
RESET ROLE;
SELECT count(*) AS markers_for_z FROM inbox.messages WHERE message_id = 'z';

-- The outcomes too: each function needs its own grant; apply_batch checks its handler like
-- apply; the failed attempts and what markers keep are not readable without a grant.
SET ROLE regress_inbox_app;
SELECT outcome FROM inbox.receive('app', 'r-1');
RESET ROLE;
GRANT EXECUTE ON FUNCTION inbox.receive(text, text, jsonb, boolean),
                          inbox.apply_batch(text, regprocedure, jsonb) TO regress_inbox_app;
SET ROLE regress_inbox_app;
SELECT outcome FROM inbox.receive('app', 'r-1', '{"entry": "e-2"}');
SELECT * FROM inbox.apply_batch('app', 'record_entry(jsonb)', '[{"id": "b-1", "payload": {"entry": "e-3"}}]');
SELECT * FROM inbox.apply_batch('app', 'privileged_handler(jsonb)', '[{"id": "b-2", "payload": {}}]');
SELECT inbox.complete('app', 'r-1', '{}');
SELECT * FROM inbox.claim_batch('app', ARRAY['b-3']);
SELECT count(*) FROM inbox.attempts;
SELECT count(*) FROM inbox.marker_details;
RESET ROLE;
SELECT entry, written_by FROM ledger ORDER BY entry;
SELECT count(*) AS markers_for_b2 FROM inbox.messages WHERE message_id = 'b-2';

-- No PUBLIC grant on any object of the extension but inbox.worker_status_1_2(),
-- inbox.stats_counters_1_3(), inbox.outbox_counts() (below) and the overloads of apply and
-- apply_batch that take fn as text, which call the functions of 1.0 as the caller (regress
-- handler_name: a role without EXECUTE on those is refused), and no SECURITY DEFINER function
-- but the relay's (SQL, with a fixed search_path: the roles that relay never write the outbox's
-- table themselves; inbox.send, in C, writes it as the extension's owner on its own).
SELECT pg_describe_object(d.classid, d.objid, 0) AS object, a.privilege_type
FROM pg_depend d
JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
CROSS JOIN LATERAL aclexplode(c.relacl) a
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'inbox') AND a.grantee = 0
UNION ALL
SELECT p.oid::regprocedure::text, a.privilege_type
FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
WHERE p.pronamespace = 'inbox'::regnamespace AND a.grantee = 0
ORDER BY 1;
SELECT oid::regprocedure AS security_definer_function FROM pg_proc
WHERE pronamespace = 'inbox'::regnamespace AND prosecdef ORDER BY oid::regprocedure::text;

-- inbox.worker_status_1_2(), behind inbox.workers from 1.2 on, asks itself for the privilege
-- that lets a role read the workers' status: EXECUTE on inbox.worker_status().
SET ROLE regress_inbox_app;
SELECT count(*) FROM inbox.worker_status_1_2();
RESET ROLE;
-- So do inbox.stats_counters_1_3() and inbox.outbox_counts(), behind inbox.stats from 1.3 on:
-- EXECUTE on inbox.stats_counters().
SET ROLE regress_inbox_app;
SELECT count(*) FROM inbox.stats_counters_1_3();
SELECT count(*) FROM inbox.outbox_counts();
RESET ROLE;
GRANT EXECUTE ON FUNCTION inbox.stats_counters() TO regress_inbox_app;
SET ROLE regress_inbox_app;
SELECT count(*) > 0 AS counters_read FROM inbox.stats_counters_1_3();
SELECT count(*) >= 0 AS outbox_read FROM inbox.outbox_counts();
RESET ROLE;
REVOKE EXECUTE ON FUNCTION inbox.stats_counters() FROM regress_inbox_app;

-- Each kind of role needs no more than the grants README, "Privileges", lists for it.
CREATE ROLE regress_readme_app;
CREATE ROLE regress_readme_ops;
CREATE ROLE regress_readme_monitoring;
GRANT USAGE ON SCHEMA inbox TO regress_readme_app, regress_readme_ops, regress_readme_monitoring;
GRANT EXECUTE ON FUNCTION inbox.claim(text, text),
                          inbox.apply(text, text, regprocedure, jsonb),
                          inbox.receive(text, text, jsonb, boolean),
                          inbox.complete(text, text, jsonb),
                          inbox.claim_batch(text, text[]),
                          inbox.apply_batch(text, regprocedure, jsonb) TO regress_readme_app;
GRANT EXECUTE ON FUNCTION inbox.forget(text, text), inbox.stats_reset(),
                          inbox.configure_consumer(text, interval, integer, regrole) TO regress_readme_ops;
GRANT EXECUTE ON PROCEDURE inbox.purge(bigint) TO regress_readme_ops;
GRANT SELECT ON inbox.stats, inbox.workers, inbox.consumers, inbox.attempts TO regress_readme_monitoring;
GRANT EXECUTE ON FUNCTION inbox.stats_counters(), inbox.marker_counts(),
                          inbox.worker_status(), inbox.failed_attempts() TO regress_readme_monitoring;
CREATE FUNCTION roles_handler(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
REVOKE EXECUTE ON FUNCTION roles_handler(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION roles_handler(jsonb) TO regress_readme_app;
SET ROLE regress_readme_app;
SELECT inbox.claim('roles', 'r-1') AS claimed,
       inbox.apply('roles', 'r-2', 'roles_handler(jsonb)', '{}') AS applied,
       (inbox.receive('roles', 'r-3', '{}')).outcome AS received;
SELECT inbox.complete('roles', 'r-3', '{"status": 200}') AS completed;
SELECT id AS claimed FROM inbox.claim_batch('roles', ARRAY['r-4']) id;
SELECT message_id, outcome FROM inbox.apply_batch('roles', 'roles_handler(jsonb)', '[{"id": "r-5"}]');
RESET ROLE;
SET ROLE regress_readme_ops;
SELECT inbox.forget('roles', 'r-1') AS forgotten,
       inbox.configure_consumer('roles', '1 day', 3) AS configured;
CALL inbox.purge();
RESET ROLE;
SET ROLE regress_readme_monitoring;
SELECT (SELECT count(*) FROM inbox.stats WHERE consumer = 'roles') AS stats,
       (SELECT count(*) FROM inbox.consumers WHERE consumer = 'roles') AS consumers,
       (SELECT count(*) FROM inbox.attempts WHERE consumer = 'roles') AS attempts,
       (SELECT count(*) >= 0 FROM inbox.workers) AS workers;
RESET ROLE;
SET ROLE regress_readme_ops;
SELECT inbox.stats_reset() AS reset, inbox.configure_consumer('roles') AS defaults,
       inbox.forget('roles', 'r-3') AS forgotten;
RESET ROLE;
DROP FUNCTION roles_handler(jsonb);
DROP OWNED BY regress_readme_app, regress_readme_ops, regress_readme_monitoring;
DROP ROLE regress_readme_app, regress_readme_ops, regress_readme_monitoring;

-- Every name inside the functions is schema-qualified: a hostile search_path in a fresh session
-- (where the statements are prepared for the first time) changes nothing.
CREATE SCHEMA evil;
CREATE TABLE evil.messages (consumer text, message_id text, processed_at timestamptz);
\c -
SET search_path = evil, public;
SELECT inbox.claim('app', 'search-path') AS claimed;
SELECT count(*) AS hijacked FROM evil.messages;
SELECT inbox.forget('app', 'search-path') AS forgotten, inbox.claim('app', 'search-path') AS claimed_again;
RESET search_path;
SELECT count(*) AS recorded FROM inbox.messages WHERE message_id = 'search-path';

DROP SCHEMA evil CASCADE;
DROP OWNED BY regress_inbox_app;
DROP ROLE regress_inbox_app;

-- Clean up: each file leaves the database as it found it.
DROP TABLE ledger;
DROP FUNCTION record_entry(jsonb), privileged_handler(jsonb);
DELETE FROM inbox.messages;
