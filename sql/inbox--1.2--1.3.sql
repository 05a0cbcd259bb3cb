-- inbox 1.3, from 1.2. The one source of what 1.3 changes: the full script inbox--1.3.sql is
-- built from inbox--1.2.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.2 (or 1.1, or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.3'" to load this file. \quit

-- ---- a view replaced with its grants --------------------------------------------------------
-- A view whose columns change is dropped and created again: the roles granted privileges on it
-- (grant_access's 'monitor', a DBA's own GRANT) keep them, and the initial privileges stay those
-- of a fresh installation (pg_dump leaves out what pg_init_privs holds: see 1.2's
-- grant_execute_like). `statements` drops the view, creates it and revokes what a fresh
-- installation revokes. Used by this script only.
CREATE FUNCTION inbox.replace_view_keeping_grants(target text, statements text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grants text[];
    statement text;
    initial pg_catalog.aclitem[];
BEGIN
    SELECT pg_catalog.array_agg(pg_catalog.format('GRANT %s ON %s TO %s%s', a.privilege_type, target,
               CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                    ELSE a.grantee::pg_catalog.regrole::pg_catalog.text END,
               CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END))
    INTO grants
    FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
    WHERE c.oid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND a.grantee OPERATOR(pg_catalog.<>) c.relowner;
    EXECUTE statements;
    SELECT i.initprivs INTO initial FROM pg_catalog.pg_init_privs i
    WHERE i.objoid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
    FOREACH statement IN ARRAY coalesce(grants, '{}') LOOP
        EXECUTE statement;
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
    WHERE i.objoid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
END $$;

-- ---- consumers' owners by name --------------------------------------------------------------
-- The registry keeps an owner by the role's name, as pg_dump names the grantees of a GRANT: a
-- restore (or a logical-replication subscriber) without that role loads the registry whole, and
-- the consumer serves superusers only, saying why, until the role exists or a superuser gives it
-- another owner (src/store/consumer_access.hpp). 1.2's regrole made the whole copy of the
-- registry fail, and with it every consumer's id. A role renamed since no longer owns the
-- consumer it owned: the rename is not seen in every database that names it (docs/security.md).
SELECT inbox.replace_view_keeping_grants('inbox.consumers', $statements$
    DROP VIEW inbox.consumers;
    -- (an owner whose role was dropped under 1.2 keeps a name that no role has)
    ALTER TABLE inbox.consumer_registry ALTER COLUMN owner TYPE pg_catalog.name
        USING pg_catalog.pg_get_userbyid(owner);
    CREATE VIEW inbox.consumers AS
    SELECT r.name AS consumer, r.retention, r.max_attempts, r.registered_at, r.owner
    FROM inbox.consumer_registry r;
    COMMENT ON VIEW inbox.consumers IS
        'One row per consumer that has claimed or been configured; a NULL retention means '
        'inbox.retention, a NULL owner that every role that may call the functions may act for it.';
    REVOKE ALL ON inbox.consumers FROM PUBLIC;
$statements$);

DROP FUNCTION inbox.replace_view_keeping_grants(text, text);

-- ---- failed attempts: a fair share per consumer, evictions counted ----
-- A full table of failed attempts (inbox.max_failed_messages) forgets the least recent failure
-- of the consumer that fails now, unless another consumer holds more messages: then of the
-- consumer that holds the most (src/stats/attempts_table.cpp). Each count forgotten is counted
-- against the consumer that lost it: inbox.stats gains attempts_evicted, its last column.
-- Who may read the counters stays decided by one privilege, EXECUTE on inbox.stats_counters(),
-- which the grants made for 1.1 and 1.2 and grant_access(..., 'monitor') give:
-- inbox.stats_counters_1_3() asks for it itself, and is therefore left executable by PUBLIC (as
-- 1.2's inbox.worker_status_1_2() is), so that no grant made before the update (nor pg_dump's
-- copy of one) falls short of the view.
CREATE FUNCTION inbox.stats_counters_1_3(OUT consumer text, OUT applied bigint,
                                         OUT duplicates bigint, OUT last_duplicate_at timestamptz,
                                         OUT stats_reset timestamptz, OUT in_progress bigint,
                                         OUT payload_mismatches bigint, OUT poisoned bigint,
                                         OUT attempts_evicted bigint)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED ROWS 10
AS 'MODULE_PATHNAME', 'inbox_stats_counters_1_3';
COMMENT ON FUNCTION inbox.stats_counters_1_3() IS
    'inbox.stats_counters() and the failed attempts forgotten per consumer (attempts_evicted); '
    'takes EXECUTE on inbox.stats_counters().';

-- Replaced, not dropped: the grants on the view stay. The NULL-consumer row (consumers beyond
-- inbox.max_consumers) carries their evictions too.
CREATE OR REPLACE VIEW inbox.stats AS
WITH counters AS (
    SELECT k.consumer COLLATE pg_catalog."C" AS consumer, k.applied, k.duplicates,
           k.last_duplicate_at, k.stats_reset, k.in_progress, k.payload_mismatches, k.poisoned,
           k.attempts_evicted
    FROM inbox.stats_counters_1_3() k
),
-- At most one row; none without the preload. Its counts are those of untracked consumers.
database_counters AS (
    SELECT * FROM counters WHERE consumer IS NULL
),
-- Every registered consumer with its markers retained and the oldest (marker_counts.cpp, which
-- reads the tables as their owner: the view reads no table itself, which a view over Citus
-- tables could only do with the reader's own privileges on their shards).
markers AS (
    SELECT m.consumer COLLATE pg_catalog."C" AS consumer, m.retained, m.oldest_processed_at
    FROM inbox.marker_counts() m
),
consumers AS (
    SELECT m.consumer FROM markers m
    UNION ALL
    SELECT k.consumer FROM counters k
    WHERE k.consumer IS NOT NULL
      AND NOT EXISTS (SELECT FROM markers m WHERE m.consumer OPERATOR(pg_catalog.=) k.consumer)
)
SELECT c.consumer,
       coalesce(k.applied, untracked.none_counted) AS applied,
       coalesce(k.duplicates, untracked.none_counted) AS duplicates,
       coalesce(k.duplicates, untracked.none_counted)::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(coalesce(k.applied, untracked.none_counted)
                    OPERATOR(pg_catalog.+) coalesce(k.duplicates, untracked.none_counted), 0)
           AS duplicate_rate,
       coalesce(m.retained, 0::pg_catalog.int8) AS retained,
       m.oldest_processed_at,
       k.last_duplicate_at,
       d.stats_reset,
       coalesce(k.in_progress, untracked.none_counted) AS in_progress,
       coalesce(k.payload_mismatches, untracked.none_counted) AS payload_mismatches,
       coalesce(k.poisoned, untracked.none_counted) AS poisoned,
       coalesce(k.attempts_evicted, untracked.none_counted) AS attempts_evicted
FROM consumers c
LEFT JOIN counters k ON k.consumer OPERATOR(pg_catalog.=) c.consumer
LEFT JOIN database_counters d ON true
LEFT JOIN markers m ON m.consumer OPERATOR(pg_catalog.=) c.consumer
-- A consumer without counters has had no counted claim since stats_reset, unless claims went
-- to the untracked row: then its numbers are unknown.
CROSS JOIN LATERAL (
    SELECT CASE WHEN d.applied OPERATOR(pg_catalog.=) 0 AND d.duplicates OPERATOR(pg_catalog.=) 0
                 AND d.in_progress OPERATOR(pg_catalog.=) 0
                 AND d.payload_mismatches OPERATOR(pg_catalog.=) 0
                 AND d.poisoned OPERATOR(pg_catalog.=) 0
                 AND d.attempts_evicted OPERATOR(pg_catalog.=) 0
                THEN 0::pg_catalog.int8 END AS none_counted
) untracked
UNION ALL
SELECT NULL, d.applied, d.duplicates,
       d.duplicates::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(d.applied OPERATOR(pg_catalog.+) d.duplicates, 0),
       NULL, NULL, d.last_duplicate_at, d.stats_reset, d.in_progress, d.payload_mismatches,
       d.poisoned, d.attempts_evicted
FROM database_counters d
WHERE d.applied OPERATOR(pg_catalog.>) 0 OR d.duplicates OPERATOR(pg_catalog.>) 0
   OR d.in_progress OPERATOR(pg_catalog.>) 0 OR d.payload_mismatches OPERATOR(pg_catalog.>) 0
   OR d.poisoned OPERATOR(pg_catalog.>) 0 OR d.attempts_evicted OPERATOR(pg_catalog.>) 0;

-- ---- configure_consumer changes what it names; reset_consumer; what 'operate' grants ---------
-- Grants of a function given to the roles that may execute another, the initial privileges kept
-- as a fresh installation's (as 1.2's function of the same name). Used by this script only.
CREATE FUNCTION inbox.grant_execute_like(model regprocedure, granted regprocedure)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grantee pg_catalog.regrole;
    initial pg_catalog.aclitem[];
BEGIN
    SELECT i.initprivs INTO initial FROM pg_catalog.pg_init_privs i
    WHERE i.objoid OPERATOR(pg_catalog.=) granted
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
    FOR grantee IN
        SELECT a.grantee::pg_catalog.regrole
        FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
        WHERE p.oid OPERATOR(pg_catalog.=) model
          AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
          AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
          AND a.grantee OPERATOR(pg_catalog.<>) 0
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO %s', granted, grantee);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
    WHERE i.objoid OPERATOR(pg_catalog.=) granted
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
END $$;

-- A call changes only the settings it names (NULL or left out: kept), as ALTER ... SET does;
-- inbox.reset_consumer gives the named ones their defaults back, as ALTER ... RESET. 1.2 set
-- every setting at each call, so that configuring a retention dropped the owner. Replaced in
-- place: its grants stay.
CREATE OR REPLACE FUNCTION inbox.configure_consumer(consumer text, retention interval DEFAULT NULL,
                                                    max_attempts integer DEFAULT NULL,
                                                    owner regrole DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_configure_consumer_1_3';
COMMENT ON FUNCTION inbox.configure_consumer(text, interval, integer, regrole) IS
    'Sets the settings it is given of a consumer (retention, failure limit, owner) and keeps the '
    'others; registers the consumer when new. inbox.reset_consumer resets.';

CREATE FUNCTION inbox.reset_consumer(consumer text, VARIADIC settings text[])
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_reset_consumer';
COMMENT ON FUNCTION inbox.reset_consumer(text, text[]) IS
    'Gives the named settings of a consumer (retention, max_attempts, owner) their defaults: '
    'inbox.retention, no failure limit, no owner.';
REVOKE ALL ON FUNCTION inbox.reset_consumer(text, text[]) FROM PUBLIC;
SELECT inbox.grant_execute_like('inbox.configure_consumer(text, interval, integer, regrole)',
                                'inbox.reset_consumer(text, text[])');
-- 'operate' includes scheduling the purge with pg_cron: the roles that may run the purge may.
SELECT inbox.grant_execute_like('inbox.purge(bigint)', 'inbox.schedule_purge(text)');
SELECT inbox.grant_execute_like('inbox.purge(bigint)', 'inbox.unschedule_purge()');
DROP FUNCTION inbox.grant_execute_like(regprocedure, regprocedure);

-- grant_access: 'operate' includes reset_consumer, and schedule_purge and unschedule_purge (with
-- pg_cron, the purge it may run by hand).
CREATE OR REPLACE FUNCTION inbox.grant_access(grantee regrole, access text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    privileges text;
    grants text[];
    statement text;
    worker record;
BEGIN
    IF grantee IS NULL OR access IS NULL THEN
        RAISE EXCEPTION 'grantee and access must not be NULL'
        USING ERRCODE = 'null_value_not_allowed',
              HINT = 'For example: SELECT inbox.grant_access(''app'', ''consume'').';
    END IF;
    privileges := CASE access
        WHEN 'consume' THEN
            'EXECUTE ON FUNCTION inbox.claim(text, text), '
            'inbox.apply(text, text, regprocedure, jsonb), '
            'inbox.receive(text, text, jsonb, boolean), inbox.complete(text, text, jsonb), '
            'inbox.claim_batch(text, text[]), inbox.apply_batch(text, regprocedure, jsonb), '
            'inbox.upsert_versioned(regclass, jsonb, name), inbox.insert_once(regclass, jsonb), '
            'inbox.message_key(text)'
        WHEN 'operate' THEN
            'EXECUTE ON FUNCTION inbox.forget(text, text), inbox.stats_reset(), '
            'inbox.configure_consumer(text, interval, integer, regrole), '
            'inbox.reset_consumer(text, text[]), inbox.schedule_purge(text), '
            'inbox.unschedule_purge()'
        WHEN 'monitor' THEN
            'SELECT ON inbox.stats, inbox.workers, inbox.consumers, inbox.attempts'
    END;
    IF privileges IS NULL THEN
        RAISE EXCEPTION 'access must be consume, operate or monitor, not %', quote_literal(access)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'consume: claim, apply, receive and the rest of the consumer''s calls; '
                     'operate: forget, purge, schedule_purge, configure_consumer, '
                     'reset_consumer, stats_reset; monitor: the views.';
    END IF;
    -- On the extension's own objects: those Citus copies to no worker node (below).
    grants := ARRAY[format('GRANT %s TO %s', privileges, grantee)];
    IF access = 'operate' THEN
        grants := grants || format('GRANT EXECUTE ON PROCEDURE inbox.purge(bigint) TO %s', grantee);
    ELSIF access = 'monitor' THEN
        -- the functions the views call run with the caller's privileges
        grants := grants || format('GRANT EXECUTE ON FUNCTION inbox.stats_counters(), '
                                   'inbox.marker_counts(), inbox.worker_status(), '
                                   'inbox.failed_attempts() TO %s', grantee);
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA inbox TO %s', grantee);
    FOREACH statement IN ARRAY grants LOOP
        EXECUTE statement;
    END LOOP;
    -- Distributed with Citus (inbox.distribute()): Citus reads the registry behind a view with the
    -- reader's own privileges, and copies the GRANTs on the schema and on its own tables to the
    -- worker nodes, but none on an extension's functions: delegated calls and the workers' own
    -- clients run them there. (Through connections of their own, outside this transaction:
    -- those grants are made again there, not the ones Citus copies within it.)
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                   WHERE p.logicalrelid OPERATOR(pg_catalog.=) 'inbox.consumer_registry'::regclass) THEN
        RETURN;
    END IF;
    IF access = 'monitor' THEN
        EXECUTE format('GRANT SELECT ON inbox.consumer_registry TO %s', grantee);
    END IF;
    FOR worker IN
        SELECT r.nodename, r.nodeport, r.result
        FROM pg_catalog.run_command_on_workers(
            -- (a worker changes objects Citus distributes only as the coordinator's own)
            'SET citus.enable_ddl_propagation = off; '
            || array_to_string(grants, '; ')) r
        WHERE NOT r.success
    LOOP
        RAISE EXCEPTION 'could not grant % access to % on worker node %:%', access, grantee,
            worker.nodename, worker.nodeport
        USING ERRCODE = 'connection_failure', DETAIL = worker.result,
              HINT = 'The role must exist on the workers: create it in a transaction of its own.';
    END LOOP;
END $$;
