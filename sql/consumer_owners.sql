-- Consumers with owners (1.2): only the roles with the owner's privileges, and superusers, act
-- for an owned consumer; any other role is refused on every entry point with 42501, and nothing
-- is written, counted or registered. inbox.consumer_registration = configured refuses a claim
-- for an unknown consumer with 42704. inbox.stats and inbox.attempts show an owned consumer's
-- rows to its owner's members and to monitoring roles (pg_read_all_stats) only.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry, inbox.stream_positions;
SELECT inbox.stats_reset();
CREATE ROLE regress_billing;                                   -- owns the consumer billing
CREATE ROLE regress_billing_svc IN ROLE regress_billing;       -- a member: billing's service
CREATE ROLE regress_shipping_svc;                              -- another service
CREATE ROLE regress_dashboard;                                 -- reads the views
CREATE ROLE regress_exporter IN ROLE pg_read_all_stats;        -- a monitoring role
SELECT inbox.grant_access(r::regrole, a)
FROM (VALUES ('regress_billing_svc', 'consume'), ('regress_billing_svc', 'operate'),
             ('regress_billing_svc', 'monitor'), ('regress_shipping_svc', 'consume'),
             ('regress_shipping_svc', 'operate'), ('regress_shipping_svc', 'monitor'),
             ('regress_dashboard', 'monitor'), ('regress_exporter', 'monitor')) g (r, a);
CREATE TABLE owned_ledger (entry text, written_by name);
GRANT INSERT ON owned_ledger TO regress_billing_svc, regress_shipping_svc;
CREATE FUNCTION owned_entry(payload jsonb) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO owned_ledger VALUES (payload ->> 'entry', current_user) $$;
CREATE FUNCTION owned_decline(payload jsonb) RETURNS void LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'declined' USING ERRCODE = 'P0001'; END $$;
CREATE VIEW owned_entry_points (entry_point, statement) AS VALUES
    ('claim', $$SELECT inbox.claim(%1$L, 'm-1')::text$$),
    ('apply', $$SELECT inbox.apply(%1$L, 'm-2', 'owned_entry(jsonb)', '{"entry": "e-2"}')::text$$),
    ('receive', $$SELECT (inbox.receive(%1$L, 'm-3')).outcome::text$$),
    ('receive without waiting', $$SELECT (inbox.receive(%1$L, 'm-4', wait => false)).outcome::text$$),
    ('complete', $$SELECT inbox.complete(%1$L, 'm-1', '{"done": true}')::text$$),
    ('forget', $$SELECT inbox.forget(%1$L, 'm-1')::text$$),
    ('claim_batch', $$SELECT string_agg(c, ',') FROM inbox.claim_batch(%1$L, ARRAY['m-5', 'm-6']) c$$),
    ('apply_batch', $$SELECT string_agg(b.outcome::text, ',') FROM inbox.apply_batch(%1$L,
        'owned_entry(jsonb)', '[{"id": "m-7", "payload": {"entry": "e-7"}}]') b$$),
    ('claim_position', $$SELECT inbox.claim_position(%1$L, 'stream-1', 1)$$),
    ('claim_positions', $$SELECT inbox.claim_positions(%1$L, 'stream-2', ARRAY[1, 2])::text$$),
    ('stream_position', $$SELECT inbox.stream_position(%1$L, 'stream-1')::text$$),
    ('retire_stream', $$SELECT inbox.retire_stream(%1$L, 'stream-3')::text$$);
-- Every entry point called for `consumer` by the current role, each in a subtransaction of its
-- own (answer(), test/regress/helpers.sql): what it returned, or its SQLSTATE and message.
CREATE FUNCTION owned_calls(consumer text) RETURNS TABLE (entry_point text, answer text)
LANGUAGE sql AS $$
    SELECT e.entry_point, answer(format(e.statement, consumer)) FROM owned_entry_points e
$$;
GRANT EXECUTE ON FUNCTION owned_calls(text) TO PUBLIC;
GRANT SELECT ON owned_entry_points TO PUBLIC;

-- ---- owners ----------------------------------------------------------------------------------
SELECT inbox.configure_consumer('billing', owner => 'regress_billing');
SELECT inbox.claim('open', 'm-0');
SELECT consumer, owner, retention, max_attempts FROM inbox.consumers ORDER BY consumer;

-- Another service is refused on every entry point, with the owner named.
SET ROLE regress_shipping_svc;
SELECT inbox.claim('billing', 'm-1');
SELECT * FROM owned_calls('billing');
RESET ROLE;
-- ... and left no trace: no marker, no detail, no counter, no failed attempt, the settings as
-- they were, the ledger empty.
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'billing';
SELECT count(*) AS details FROM inbox.marker_details;
SELECT count(*) AS counted FROM inbox.stats_counters() WHERE consumer = 'billing';
SELECT count(*) AS failed FROM inbox.attempts WHERE consumer = 'billing';
SELECT consumer, owner, max_attempts FROM inbox.consumers WHERE consumer = 'billing';
SELECT count(*) AS entries FROM owned_ledger;

-- The owner's member is served on every entry point, and so is a superuser.
SET ROLE regress_billing_svc;
SELECT * FROM owned_calls('billing');
RESET ROLE;
SELECT entry, written_by FROM owned_ledger ORDER BY entry;
SELECT * FROM owned_calls('billing');
-- An open consumer serves every role that may call the functions, as in 1.1.
SET ROLE regress_shipping_svc;
SELECT * FROM owned_calls('open');
RESET ROLE;

-- The owner's member configures it and may keep it, or give it to a role it belongs to; each
-- call sets every setting, so the owner is given again.
SET ROLE regress_billing_svc;
SELECT inbox.configure_consumer('billing', retention => '7 days', owner => 'regress_billing');
SELECT inbox.configure_consumer('billing', owner => 'regress_shipping_svc');
SELECT inbox.configure_consumer('new-for-billing', owner => 'regress_billing');
-- Another role may neither take it, nor open it, nor poison its messages.
SET ROLE regress_shipping_svc;
SELECT inbox.configure_consumer('billing', owner => 'regress_shipping_svc');
SELECT inbox.configure_consumer('billing');
SELECT inbox.configure_consumer('billing', max_attempts => 1, owner => 'regress_billing');
RESET ROLE;
SELECT consumer, owner, retention FROM inbox.consumers WHERE consumer LIKE '%billing' ORDER BY 1;
-- An owner must be a role.
SELECT inbox.configure_consumer('billing', owner => 0::oid::regrole);
SELECT inbox.configure_consumer('billing', owner => 4294967000::oid::regrole);

-- A consumer whose owner role was dropped serves superusers only, until one gives it an owner.
CREATE ROLE regress_gone;
SELECT inbox.configure_consumer('orphan', owner => 'regress_gone');
DROP ROLE regress_gone;
SET ROLE regress_billing_svc;
SELECT answer($$SELECT inbox.claim('orphan', 'm-1')::text$$);
RESET ROLE;
SELECT inbox.claim('orphan', 'm-1');
SELECT inbox.configure_consumer('orphan', owner => 'regress_billing');
SET ROLE regress_billing_svc;
SELECT inbox.claim('orphan', 'm-2');
RESET ROLE;

-- Membership is PostgreSQL's: revoked, it stops at once; granted, it starts.
REVOKE regress_billing FROM regress_billing_svc;
SET ROLE regress_billing_svc;
SELECT answer($$SELECT inbox.claim('billing', 'm-8')::text$$);
RESET ROLE;
GRANT regress_billing TO regress_billing_svc;
SET ROLE regress_billing_svc;
SELECT answer($$SELECT inbox.claim('billing', 'm-8')::text$$);
RESET ROLE;
-- A NOINHERIT member has the owner's privileges only once it has SET ROLE to the owner, as for
-- a table the owner role owns (docs/security.md).
CREATE ROLE regress_billing_admin NOINHERIT IN ROLE regress_billing;
SELECT inbox.grant_access(r::regrole, 'consume')
FROM (VALUES ('regress_billing_admin'), ('regress_billing')) g (r);
SET ROLE regress_billing_admin;
SELECT answer($$SELECT inbox.claim('billing', 'm-10')::text$$);
SET ROLE regress_billing;
SELECT answer($$SELECT inbox.claim('billing', 'm-10')::text$$);
RESET ROLE;
-- A SECURITY DEFINER function acts as its owner: a member's function serves any caller it is
-- granted to.
CREATE FUNCTION claim_for_billing(message_id text) RETURNS boolean LANGUAGE sql
    SECURITY DEFINER SET search_path = pg_catalog AS $$ SELECT inbox.claim('billing', message_id) $$;
ALTER FUNCTION claim_for_billing(text) OWNER TO regress_billing_svc;
GRANT EXECUTE ON FUNCTION claim_for_billing(text) TO regress_shipping_svc;
SET ROLE regress_shipping_svc;
SELECT claim_for_billing('m-9');
RESET ROLE;
DROP FUNCTION claim_for_billing(text);

-- ---- what the views show ---------------------------------------------------------------------
-- The consumers of this test (counters and failed attempts of earlier tests live on in shared
-- memory).
CREATE VIEW owned_consumers (consumer) AS VALUES ('billing'), ('open'), ('orphan'), ('new-for-billing');
GRANT SELECT ON owned_consumers TO PUBLIC;
-- A failed attempt of each consumer.
SET ROLE regress_billing_svc;
SELECT outcome FROM inbox.apply_batch('billing', 'owned_decline(jsonb)', '[{"id": "f-1"}]');
SET ROLE regress_shipping_svc;
SELECT outcome FROM inbox.apply_batch('open', 'owned_decline(jsonb)', '[{"id": "f-1"}]');
RESET ROLE;
-- Every reader with monitor access sees every consumer's numbers, owned or not (1.3): alerting
-- on them must not depend on owners. The message ids and error texts of inbox.attempts are an
-- owned consumer's own: shown to its owner's members, to a monitoring role and to a superuser,
-- NULL ("hidden") to other readers. The functions behind the views show the same.
CREATE FUNCTION owned_views() RETURNS TABLE (viewer name, stats text, attempts text,
                                             counters text, marker_counts text)
LANGUAGE sql AS $$
    SELECT current_user,
           (SELECT string_agg(consumer, ',' ORDER BY consumer) FROM inbox.stats
            WHERE consumer IN (SELECT consumer FROM owned_consumers)),
           (SELECT string_agg(consumer || CASE WHEN message_id IS NULL AND last_message IS NULL
                                               THEN ' hidden' ELSE '' END, ',' ORDER BY consumer)
            FROM inbox.attempts WHERE consumer IN (SELECT consumer FROM owned_consumers)),
           (SELECT string_agg(consumer, ',' ORDER BY consumer) FROM inbox.stats_counters()
            WHERE consumer IN (SELECT consumer FROM owned_consumers)),
           (SELECT string_agg(consumer, ',' ORDER BY consumer) FROM inbox.marker_counts()
            WHERE consumer IN (SELECT consumer FROM owned_consumers))
$$;
GRANT EXECUTE ON FUNCTION owned_views() TO PUBLIC;
SET ROLE regress_dashboard;
SELECT * FROM owned_views();
SET ROLE regress_shipping_svc;
SELECT * FROM owned_views();
SET ROLE regress_billing_svc;
SELECT * FROM owned_views();
SET ROLE regress_exporter;
SELECT * FROM owned_views();
RESET ROLE;
SELECT * FROM owned_views();
-- The consumers' list and owners are no secret to a reader.
SET ROLE regress_dashboard;
SELECT consumer, owner FROM inbox.consumers ORDER BY consumer;
RESET ROLE;

-- ---- registration by configure_consumer only -------------------------------------------------
SHOW inbox.consumer_registration;
-- A database's policy: a role it binds cannot lift it.
SET ROLE regress_shipping_svc;
SET inbox.consumer_registration = configured;
RESET ROLE;
SET inbox.consumer_registration = configured;
-- A typo is refused on every entry point, with the way to register; nothing is registered or
-- counted.
SET ROLE regress_shipping_svc;
SELECT inbox.claim('biling', 'm-1');
SELECT * FROM owned_calls('biling');
RESET ROLE;
SELECT count(*) AS registered FROM inbox.consumers WHERE consumer = 'biling';
SELECT count(*) AS counted FROM inbox.stats_counters() WHERE consumer = 'biling';
-- configure_consumer registers; then claims are served.
SELECT inbox.configure_consumer('shipping', owner => 'regress_shipping_svc');
SET ROLE regress_shipping_svc;
SELECT inbox.claim('shipping', 'm-1');
RESET ROLE;
SET inbox.consumer_registration = wrong;
RESET inbox.consumer_registration;

-- Per database, with ALTER DATABASE ... SET, for every new session.
ALTER DATABASE :"DBNAME" SET inbox.consumer_registration = configured;
\c
SHOW inbox.consumer_registration;
SELECT inbox.claim('unknown', 'm-1');
ALTER DATABASE :"DBNAME" RESET inbox.consumer_registration;
\c
SHOW inbox.consumer_registration;

DROP VIEW owned_entry_points, owned_consumers;
DROP FUNCTION owned_calls(text), owned_views(), owned_entry(jsonb),
    owned_decline(jsonb);
DROP TABLE owned_ledger;
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry, inbox.stream_positions;
SELECT inbox.stats_reset();
DROP OWNED BY regress_billing_svc, regress_shipping_svc, regress_dashboard, regress_exporter,
    regress_billing_admin, regress_billing;
DROP ROLE regress_billing_svc, regress_shipping_svc, regress_dashboard, regress_exporter,
    regress_billing_admin, regress_billing;
