-- inbox 1.2, from 1.1. The one source of what 1.2 changes: the full script inbox--1.2.sql is
-- built from inbox--1.1.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.1 (or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.2'" to load this file. \quit

-- ---- consumer registration ------------------------------------------------------------------
-- A consumer registers in the transaction of its first claim and takes the first free id above
-- the highest registered one, reserved without waiting (docs/markers.md, "Consumers"). No
-- sequence: its values were burnt by every rolled-back first claim, and a logical replica does
-- not follow it.
ALTER TABLE inbox.consumer_registry ALTER COLUMN id DROP DEFAULT;
ALTER EXTENSION inbox DROP SEQUENCE inbox.consumer_registry_id_seq;
DROP SEQUENCE inbox.consumer_registry_id_seq;

-- ---- grants carried to a function that replaces another -----------------------------------
-- What 1.2 replaces keeps its grants: the roles that could execute the function replaced may
-- execute its successor, in a dump too. A grant made by an extension script counts as the
-- extension's own (pg_init_privs), which pg_dump leaves out, so the initial privileges are set
-- back to those of a fresh installation once the grants are made. Used by this script only.
CREATE FUNCTION inbox.grant_execute_like(replaced regprocedure, successor regprocedure)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grantee pg_catalog.regrole;
    initial pg_catalog.aclitem[];
BEGIN
    SELECT i.initprivs INTO initial FROM pg_catalog.pg_init_privs i
    WHERE i.objoid OPERATOR(pg_catalog.=) successor
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
    FOR grantee IN
        SELECT a.grantee::pg_catalog.regrole
        FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
        WHERE p.oid OPERATOR(pg_catalog.=) replaced
          AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
          AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
          AND a.grantee OPERATOR(pg_catalog.<>) 0
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', successor, grantee);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
    WHERE i.objoid OPERATOR(pg_catalog.=) successor
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
END $$;

-- ---- failed attempts by consumer name -------------------------------------------------------
-- Failed attempts are kept by the consumer's name (and the registry's incarnation), not its id:
-- a consumer whose first claims all rolled back is not registered, yet its failures count and
-- show. The roles that could read them keep the right to.
CREATE FUNCTION inbox.failed_attempts(OUT consumer text, OUT message_id text,
                                      OUT failures integer, OUT last_sqlstate text,
                                      OUT last_message text, OUT last_failed_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL SAFE ROWS 10
AS 'MODULE_PATHNAME', 'inbox_failed_attempts';
COMMENT ON FUNCTION inbox.failed_attempts() IS
    'The failed attempts kept for this database (shared memory; none without shared_preload_libraries).';
REVOKE ALL ON FUNCTION inbox.failed_attempts() FROM PUBLIC;
SELECT inbox.grant_execute_like('inbox.attempt_entries()', 'inbox.failed_attempts()');

CREATE OR REPLACE VIEW inbox.attempts AS
SELECT a.consumer COLLATE pg_catalog."C" AS consumer, a.message_id COLLATE pg_catalog."C" AS message_id,
       a.failures, a.last_sqlstate, a.last_message, a.last_failed_at
FROM inbox.failed_attempts() a;
DROP FUNCTION inbox.attempt_entries();

-- ---- Citus: writes through inbox.messages, and what 'consume' grants -------------------------

-- processed_at from an immutable function (to_timestamp of the epoch seconds; the same value to
-- the microsecond as 1.1's timestamptz + interval, which is only stable): a DELETE through the
-- view becomes deletes of the stored rows with this expression in their condition
-- (messages_delete.cpp), and Citus refuses a stable function of a column in a write.
CREATE OR REPLACE VIEW inbox.messages AS
SELECT r.name AS consumer,
       CASE WHEN pg_catalog.length(m.message_key) OPERATOR(pg_catalog.=) 16
            THEN pg_catalog.encode(m.message_key, 'hex')::pg_catalog.uuid::pg_catalog.text
            WHEN pg_catalog.length(m.message_key) OPERATOR(pg_catalog.=) 17
             AND pg_catalog.get_byte(m.message_key, 16) OPERATOR(pg_catalog.=) 0
            THEN pg_catalog.convert_from(pg_catalog.substr(m.message_key, 1, 16),
                                         pg_catalog.getdatabaseencoding())
            ELSE pg_catalog.convert_from(m.message_key, pg_catalog.getdatabaseencoding())
       END COLLATE pg_catalog."C" AS message_id,
       -- (seconds since 1970-01-01 UTC: 946684800 of them before 2000-01-01)
       pg_catalog.to_timestamp((946684800::pg_catalog.int8
           OPERATOR(pg_catalog.+) (m.time_bucket::pg_catalog.int8 OPERATOR(pg_catalog.*) 256)
           OPERATOR(pg_catalog.+) (m.time_offset::pg_catalog.int4 OPERATOR(pg_catalog.&) 255)
           )::pg_catalog.float8) AS processed_at
FROM inbox.markers m
JOIN inbox.consumer_registry r ON r.id OPERATOR(pg_catalog.=) m.consumer_id;

-- grant_access: 'consume' includes inbox.message_key(text), the stored form of a message id: a
-- handler (or a function delegated to the marker's worker) computes with it the key of a table
-- co-located with the markers (docs/citus.md, "Co-location with business tables"), on every
-- node like the rest; 'monitor' includes inbox.failed_attempts(), which inbox.attempts now calls.
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
            'inbox.configure_consumer(text, interval, integer, regrole)'
        WHEN 'monitor' THEN
            'SELECT ON inbox.stats, inbox.workers, inbox.consumers, inbox.attempts'
    END;
    IF privileges IS NULL THEN
        RAISE EXCEPTION 'access must be consume, operate or monitor, not %', quote_literal(access)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'consume: claim, apply, receive and the rest of the consumer''s calls; '
                     'operate: forget, purge, configure_consumer, stats_reset; monitor: the views.';
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

-- ---- drop guard --------------------------------------------------------------------------------
-- Every way of dropping the extension meets the guard. The library's object-access hook refuses
-- to delete the markers table with its markers, whatever the statement
-- (src/drop/drop_guard_hook.cpp); the event trigger fires for DROP OWNED too, so that the library
-- (and with it the hook) is loaded before DROP OWNED drops anything, in a session without
-- shared_preload_libraries as well. The tags of an event trigger cannot be altered: it is created
-- again.
DROP EVENT TRIGGER inbox_guard_drop;
CREATE EVENT TRIGGER inbox_guard_drop ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION inbox.guard_drop();


-- ---- Purge workers: a cycle that gave way to the purge lock, and when the last error was ------

-- inbox.worker_status() and the columns 1.2 adds: blocked_since (since when every worker of the
-- database gave way to another purge holding the purge lock) and last_error_at. Who may read the
-- workers' status stays decided by one privilege, EXECUTE on inbox.worker_status(), which 1.1's
-- grants and grant_access(..., 'monitor') give: this function asks for it itself, and is
-- therefore left executable by PUBLIC, so that no grant made before the update (nor pg_dump's
-- copy of one) falls short of the new view.
CREATE FUNCTION inbox.worker_status_1_2(
    OUT database_oid oid, OUT pid integer, OUT state text,
    OUT last_cycle_start timestamptz, OUT last_cycle_end timestamptz,
    OUT last_cycle_deleted bigint, OUT total_deleted bigint, OUT last_error text,
    OUT blocked_since timestamptz, OUT last_error_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'inbox_worker_status_1_2';

-- Replaced, not dropped: the grants on the view and the views built on it stay.
CREATE OR REPLACE VIEW inbox.workers AS
    SELECT d.datname AS database, w.pid, w.state, w.last_cycle_start, w.last_cycle_end,
           w.last_cycle_deleted, w.total_deleted, w.last_error, w.blocked_since, w.last_error_at
    FROM inbox.worker_status_1_2() w
    LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) w.database_oid;

-- ---- consumers with owners ------------------------------------------------------------------
-- A consumer may have an owner: only the roles with its privileges, and superusers, may then act
-- for it (src/store/consumer_access.hpp). A regrole: a dump names the role, pg_upgrade keeps the
-- roles' OIDs. Every consumer of 1.1 stays open.
ALTER TABLE inbox.consumer_registry ADD COLUMN owner regrole;

CREATE OR REPLACE VIEW inbox.consumers AS
SELECT r.name AS consumer, r.retention, r.max_attempts, r.registered_at, r.owner
FROM inbox.consumer_registry r;
COMMENT ON VIEW inbox.consumers IS
    'One row per consumer that has claimed or been configured; a NULL retention means '
    'inbox.retention, a NULL owner that every role that may call the functions may act for it.';

-- configure_consumer gains the owner: replaced, its grants with it.
CREATE FUNCTION inbox.configure_consumer(consumer text, retention interval DEFAULT NULL,
                                         max_attempts integer DEFAULT NULL,
                                         owner regrole DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_configure_consumer';
COMMENT ON FUNCTION inbox.configure_consumer(text, interval, integer, regrole) IS
    'Sets a consumer''s own retention, failure limit and owner (NULL: the defaults, no owner); '
    'registers it when new.';
REVOKE ALL ON FUNCTION inbox.configure_consumer(text, interval, integer, regrole) FROM PUBLIC;
SELECT inbox.grant_execute_like('inbox.configure_consumer(text, interval, integer)',
                                'inbox.configure_consumer(text, interval, integer, regrole)');
DROP FUNCTION inbox.configure_consumer(text, interval, integer);

DROP FUNCTION inbox.grant_execute_like(regprocedure, regprocedure);
