-- inbox.configure_consumer changes only the settings a call names (1.3): one left out, or NULL,
-- keeps its value, as ALTER ... SET keeps what it does not name; inbox.reset_consumer gives the
-- named ones their defaults back. 'operate' access includes both, and scheduling the purge.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry;
CREATE ROLE regress_cc_owner;
CREATE ROLE regress_cc_ops;
CREATE ROLE regress_cc_other;
SELECT inbox.grant_access('regress_cc_ops', 'operate'), inbox.grant_access('regress_cc_other', 'operate');
GRANT regress_cc_owner TO regress_cc_ops;

-- The owner and the failure limit, then the retention alone: the first two are kept.
SELECT inbox.configure_consumer('cc-billing', owner => 'regress_cc_owner', max_attempts => 5);
SELECT inbox.configure_consumer('cc-billing', retention => '14 days');
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-billing';
-- NULL is "not named" too, and a call that names nothing changes nothing.
SELECT inbox.configure_consumer('cc-billing', retention => NULL, max_attempts => NULL, owner => NULL);
SELECT inbox.configure_consumer('cc-billing');
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-billing';
-- The owner's member changes one setting and keeps the owner.
SET ROLE regress_cc_ops;
SELECT inbox.configure_consumer('cc-billing', max_attempts => 3);
RESET ROLE;
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-billing';

-- Resetting is explicit: one setting, or several.
SELECT inbox.reset_consumer('cc-billing', 'max_attempts');
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-billing';
-- Another operator may not reset an owned consumer's settings, nor open it.
SET ROLE regress_cc_other;
SELECT answer($$SELECT inbox.reset_consumer('cc-billing', 'owner')::text$$);
SELECT answer($$SELECT inbox.reset_consumer('cc-billing', 'retention')::text$$);
RESET ROLE;
SELECT inbox.reset_consumer('cc-billing', 'retention', 'owner');
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-billing';
-- A new consumer is registered with its defaults.
SELECT inbox.reset_consumer('cc-new', 'retention');
SELECT consumer, retention, max_attempts, owner FROM inbox.consumers WHERE consumer = 'cc-new';

-- Bad input: a setting that does not exist, none, a NULL one; a bad value to set.
\set VERBOSITY sqlstate
SELECT inbox.reset_consumer('cc-billing', 'retention', 'colour');
SELECT inbox.reset_consumer('cc-billing');
SELECT inbox.reset_consumer('cc-billing', NULL);
SELECT inbox.reset_consumer('cc-billing', VARIADIC ARRAY[]::text[]);
SELECT inbox.configure_consumer('cc-billing', retention => '0 s');
SELECT inbox.configure_consumer('cc-billing', max_attempts => 0);
SELECT inbox.reset_consumer(NULL, 'retention');
\set VERBOSITY default
SELECT inbox.reset_consumer('cc-billing', 'colour');
BEGIN READ ONLY;
SELECT answer($$SELECT inbox.reset_consumer('cc-billing', 'retention')::text$$);
ROLLBACK;

-- What 'operate' grants: forget, stats_reset, purge, configure_consumer, reset_consumer and the
-- pg_cron scheduling of the purge.
SELECT p AS routine, has_function_privilege('regress_cc_ops', p, 'EXECUTE') AS operate
FROM unnest(ARRAY['inbox.forget(text, text)', 'inbox.stats_reset()', 'inbox.purge(bigint)',
                  'inbox.configure_consumer(text, interval, integer, regrole)',
                  'inbox.reset_consumer(text, text[])', 'inbox.schedule_purge(text)',
                  'inbox.unschedule_purge()']) p;
SELECT has_function_privilege('regress_cc_ops', 'inbox.claim(text, text)', 'EXECUTE') AS consume;

TRUNCATE inbox.markers, inbox.marker_details, inbox.consumer_registry;
DROP OWNED BY regress_cc_owner, regress_cc_ops, regress_cc_other;
DROP ROLE regress_cc_owner, regress_cc_ops, regress_cc_other;
