-- inbox 1.0 -> 1.1: the compact marker store.
--
-- The markers of 1.0's table inbox.messages move into inbox.markers, their consumers into
-- inbox.consumer_registry, and inbox.messages becomes a view with the same columns. Claims wait
-- for the update (the table is locked against writes at once) and go on with the new store when
-- it commits; every marker is kept. README, "Updating from 1.0", says how long it takes.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.1'" to load this file. \quit

-- The schema must be the installing role's own. A schema "inbox" that someone else prepared
-- (the CVE-2022-2625 family) would let its owner plant functions that shadow ours for other
-- argument types (inbox.claim(varchar, varchar) is an exact match for drivers that bind strings
-- as varchar), or rename the schema later and put his own inbox.claim in its place. Refused: a
-- schema owned by another role, CREATE on it granted to another role, or objects in it that are
-- not the extension's. The check itself names everything with its schema, down to each operator:
-- an object in the schema it checks would otherwise run as the installer.
DO $guard$
DECLARE
    inbox_schema pg_catalog.oid;
    schema_owner pg_catalog.oid;
    other_creators pg_catalog.text;
    foreign_objects pg_catalog.text;
BEGIN
    SELECT n.oid, n.nspowner INTO inbox_schema, schema_owner
    FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) 'inbox';
    IF schema_owner OPERATOR(pg_catalog.<>)
       (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) current_user) THEN
        RAISE EXCEPTION 'schema "inbox" is owned by role "%", not by "%"',
            pg_catalog.pg_get_userbyid(schema_owner), current_user
        USING ERRCODE = 'insufficient_privilege',
              HINT = pg_catalog.format('Its owner could replace the extension''s functions. Drop '
                                       'the schema, or make it yours (ALTER SCHEMA inbox OWNER TO '
                                       '%I) after checking what it contains, then try again.',
                                       current_user);
    END IF;

    SELECT pg_catalog.string_agg(CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
               ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END, ', ')
    INTO other_creators
    FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode(n.nspacl) a
    WHERE n.oid OPERATOR(pg_catalog.=) inbox_schema
      AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
      AND a.grantee OPERATOR(pg_catalog.<>) n.nspowner;
    IF other_creators IS NOT NULL THEN
        RAISE EXCEPTION 'other roles may create objects in schema "inbox": %', other_creators
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'REVOKE CREATE ON SCHEMA inbox FROM those roles, then try again.';
    END IF;

    -- Tables, views, sequences, functions, types, operators and the like that are neither the
    -- extension's nor part of one of its objects (an index, a constraint's index).
    WITH RECURSIVE ours(classid, objid) AS (
        SELECT d.classid, d.objid FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
        WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
          AND e.extname OPERATOR(pg_catalog.=) 'inbox' AND d.deptype OPERATOR(pg_catalog.=) 'e'
        UNION
        SELECT d.classid, d.objid FROM pg_catalog.pg_depend d
        JOIN ours o ON o.classid OPERATOR(pg_catalog.=) d.refclassid
                   AND o.objid OPERATOR(pg_catalog.=) d.refobjid
        WHERE d.deptype OPERATOR(pg_catalog.=) ANY ('{a,i}'::pg_catalog."char"[])
    ),
    in_schema(classid, objid) AS (
        SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_class c
        WHERE c.relnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid FROM pg_catalog.pg_proc p
        WHERE p.pronamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid FROM pg_catalog.pg_type t
        WHERE t.typnamespace OPERATOR(pg_catalog.=) inbox_schema
          AND t.typrelid OPERATOR(pg_catalog.=) 0
          AND NOT (t.typelem OPERATOR(pg_catalog.<>) 0
                   AND t.typsubscript OPERATOR(pg_catalog.=) 'pg_catalog.array_subscript_handler'::pg_catalog.regproc)
        UNION ALL
        SELECT 'pg_catalog.pg_operator'::pg_catalog.regclass, o.oid FROM pg_catalog.pg_operator o
        WHERE o.oprnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_collation'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_collation c
        WHERE c.collnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_conversion'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_conversion c
        WHERE c.connamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_opfamily'::pg_catalog.regclass, f.oid FROM pg_catalog.pg_opfamily f
        WHERE f.opfnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_opclass'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_opclass c
        WHERE c.opcnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_ts_config'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_ts_config c
        WHERE c.cfgnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_ts_dict'::pg_catalog.regclass, d.oid FROM pg_catalog.pg_ts_dict d
        WHERE d.dictnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_ts_parser'::pg_catalog.regclass, p.oid FROM pg_catalog.pg_ts_parser p
        WHERE p.prsnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_ts_template'::pg_catalog.regclass, t.oid FROM pg_catalog.pg_ts_template t
        WHERE t.tmplnamespace OPERATOR(pg_catalog.=) inbox_schema
        UNION ALL
        SELECT 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass, s.oid FROM pg_catalog.pg_statistic_ext s
        WHERE s.stxnamespace OPERATOR(pg_catalog.=) inbox_schema
    )
    SELECT pg_catalog.string_agg(f.description, ', ' ORDER BY f.description)
    INTO foreign_objects
    FROM (SELECT pg_catalog.pg_describe_object(i.classid, i.objid, 0) AS description
          FROM in_schema i
          WHERE NOT EXISTS (SELECT FROM ours o WHERE o.classid OPERATOR(pg_catalog.=) i.classid
                                                 AND o.objid OPERATOR(pg_catalog.=) i.objid)) f;
    IF foreign_objects IS NOT NULL THEN
        RAISE EXCEPTION 'schema "inbox" contains objects that are not part of the extension: %',
            foreign_objects
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'They could shadow the extension''s functions. Move or drop them, then try again.';
    END IF;
END
$guard$;

LOCK TABLE inbox.messages IN EXCLUSIVE MODE;

CREATE SEQUENCE inbox.consumer_registry_id_seq AS smallint MINVALUE 1 MAXVALUE 32767 NO CYCLE;

CREATE TABLE inbox.consumer_registry (
    id            smallint NOT NULL
                  DEFAULT pg_catalog.nextval('inbox.consumer_registry_id_seq'::pg_catalog.regclass),
    name          text COLLATE pg_catalog."C" NOT NULL,
    retention     interval,
    max_attempts  integer,
    registered_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT consumer_registry_pkey PRIMARY KEY (id),
    CONSTRAINT consumer_registry_name_key UNIQUE (name),
    CONSTRAINT consumer_registry_retention_check
        CHECK (retention OPERATOR(pg_catalog.>=) '1 s'::pg_catalog.interval),
    CONSTRAINT consumer_registry_max_attempts_check
        CHECK (max_attempts OPERATOR(pg_catalog.>=) 1)
);
ALTER SEQUENCE inbox.consumer_registry_id_seq OWNED BY inbox.consumer_registry.id;
COMMENT ON TABLE inbox.consumer_registry IS
    'One row per consumer that has claimed or been configured: its id in inbox.markers and its settings.';

CREATE TABLE inbox.markers (
    time_bucket integer NOT NULL,
    consumer_id smallint NOT NULL,
    time_offset pg_catalog."char" NOT NULL,
    message_key bytea NOT NULL
);
COMMENT ON TABLE inbox.markers IS
    'Markers of processed messages, compact; read them through the view inbox.messages.';

-- Markers are user data: pg_dump includes them, with the registry that names their consumers.
SELECT pg_catalog.pg_extension_config_dump('inbox.consumer_registry', '');
SELECT pg_catalog.pg_extension_config_dump('inbox.consumer_registry_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('inbox.markers', '');

-- The stored forms of a message id and of a time (C, immutable), for the owner's writes through
-- inbox.messages and the update from 1.0. The views read them back with pg_catalog's functions
-- only, so that a role allowed to read a view needs no EXECUTE on functions of ours.
CREATE FUNCTION inbox.message_key(message_id text) RETURNS bytea
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'inbox_message_key';
CREATE FUNCTION inbox.marker_time_bucket(processed_at timestamptz) RETURNS integer
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'inbox_marker_time_bucket';
CREATE FUNCTION inbox.marker_time_offset(processed_at timestamptz) RETURNS pg_catalog."char"
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'inbox_marker_time_offset';
-- The id of a consumer, registered when new (any name the registry can hold: it serves the
-- owner's own writes through inbox.messages).
CREATE FUNCTION inbox.consumer_id(consumer text) RETURNS smallint
LANGUAGE c VOLATILE STRICT PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'inbox_consumer_id';


-- The consumers, each found by one descent of 1.0's index (consumer, processed_at), registered
-- in name order, with their oldest marker's time as the time of their registration.
WITH RECURSIVE consumers(consumer) AS (
    (SELECT m.consumer FROM inbox.messages m ORDER BY m.consumer LIMIT 1)
    UNION ALL
    SELECT (SELECT m.consumer FROM inbox.messages m
            WHERE m.consumer OPERATOR(pg_catalog.>) c.consumer ORDER BY m.consumer LIMIT 1)
    FROM consumers c WHERE c.consumer IS NOT NULL
)
INSERT INTO inbox.consumer_registry (name, registered_at)
SELECT c.consumer,
       (SELECT pg_catalog.min(m.processed_at) FROM inbox.messages m
        WHERE m.consumer OPERATOR(pg_catalog.=) c.consumer)
FROM consumers c WHERE c.consumer IS NOT NULL ORDER BY c.consumer;

INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
SELECT inbox.marker_time_bucket(m.processed_at), r.id, inbox.marker_time_offset(m.processed_at),
       inbox.message_key(m.message_id)
FROM inbox.messages m
JOIN inbox.consumer_registry r ON r.name OPERATOR(pg_catalog.=) m.consumer;

-- Built after the load: one sort each, and leaf pages filled as densely as an index can be.
ALTER TABLE inbox.markers ADD CONSTRAINT markers_pkey PRIMARY KEY (consumer_id, message_key);
CREATE INDEX markers_retention ON inbox.markers (consumer_id, time_bucket);

-- The statistics read the new store and count the outcomes of 1.1: inbox.stats_counters() gains
-- columns, and the view appends them. The old function steps aside under another name until its
-- grants are copied (below); CREATE OR REPLACE keeps the view's grants.
ALTER FUNCTION inbox.stats_counters() RENAME TO stats_counters_1_0;
CREATE FUNCTION inbox.stats_counters(OUT consumer text, OUT applied bigint,
                                     OUT duplicates bigint, OUT last_duplicate_at timestamptz,
                                     OUT stats_reset timestamptz, OUT in_progress bigint,
                                     OUT payload_mismatches bigint, OUT poisoned bigint)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED ROWS 10
AS 'MODULE_PATHNAME', 'inbox_stats_counters';
COMMENT ON FUNCTION inbox.stats_counters() IS
    'Claim counters of this database: one row per tracked consumer, then one with a NULL consumer '
    'for consumers beyond inbox.max_consumers. No rows without shared_preload_libraries. '
    'On a Citus coordinator, the counters of every node.';
REVOKE ALL ON FUNCTION inbox.stats_counters() FROM PUBLIC;
CREATE FUNCTION inbox.marker_counts(OUT consumer text, OUT retained bigint,
                                    OUT oldest_processed_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL UNSAFE ROWS 10
AS 'MODULE_PATHNAME', 'inbox_marker_counts';
COMMENT ON FUNCTION inbox.marker_counts() IS
    'Per registered consumer: its markers (exact up to 1000, estimated above) and the oldest one''s time.';
REVOKE ALL ON FUNCTION inbox.marker_counts() FROM PUBLIC;

-- One row per consumer in the registry or with counters, and a row with a NULL consumer for the
-- claims of consumers beyond inbox.max_consumers, when there are any. Every part is an index
-- descent, a bounded scan or a bounded sample, whatever the size of the inbox (README,
-- "Monitoring").
CREATE OR REPLACE VIEW inbox.stats AS
WITH counters AS (
    SELECT k.consumer COLLATE pg_catalog."C" AS consumer, k.applied, k.duplicates,
           k.last_duplicate_at, k.stats_reset, k.in_progress, k.payload_mismatches, k.poisoned
    FROM inbox.stats_counters() k
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
       coalesce(k.poisoned, untracked.none_counted) AS poisoned
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
                THEN 0::pg_catalog.int8 END AS none_counted
) untracked
UNION ALL
SELECT NULL, d.applied, d.duplicates,
       d.duplicates::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(d.applied OPERATOR(pg_catalog.+) d.duplicates, 0),
       NULL, NULL, d.last_duplicate_at, d.stats_reset, d.in_progress, d.payload_mismatches,
       d.poisoned
FROM database_counters d
WHERE d.applied OPERATOR(pg_catalog.>) 0 OR d.duplicates OPERATOR(pg_catalog.>) 0
   OR d.in_progress OPERATOR(pg_catalog.>) 0 OR d.payload_mismatches OPERATOR(pg_catalog.>) 0
   OR d.poisoned OPERATOR(pg_catalog.>) 0;
COMMENT ON VIEW inbox.stats IS
    'Per consumer: committed claims, duplicates, their rate, markers retained and the oldest.';

-- The table becomes a view; what was granted on the table is granted on the view (below).
ALTER TABLE inbox.messages RENAME TO messages_1_0;

-- Back from the stored forms: 16 bytes are a UUID, 17 ending in a 0 byte a 16-byte id, anything
-- else the id's bytes; the time is whole seconds since 2000-01-01 UTC, in 256-second buckets.
CREATE VIEW inbox.messages AS
SELECT r.name AS consumer,
       CASE WHEN pg_catalog.length(m.message_key) OPERATOR(pg_catalog.=) 16
            THEN pg_catalog.encode(m.message_key, 'hex')::pg_catalog.uuid::pg_catalog.text
            WHEN pg_catalog.length(m.message_key) OPERATOR(pg_catalog.=) 17
             AND pg_catalog.get_byte(m.message_key, 16) OPERATOR(pg_catalog.=) 0
            THEN pg_catalog.convert_from(pg_catalog.substr(m.message_key, 1, 16),
                                         pg_catalog.getdatabaseencoding())
            ELSE pg_catalog.convert_from(m.message_key, pg_catalog.getdatabaseencoding())
       END COLLATE pg_catalog."C" AS message_id,
       -- (OPERATOR() forms all bind alike, left to right: every step is parenthesized)
       '2000-01-01 00:00:00+00'::pg_catalog.timestamptz OPERATOR(pg_catalog.+)
           ((((m.time_bucket::pg_catalog.int8 OPERATOR(pg_catalog.*) 256)
              OPERATOR(pg_catalog.+) (m.time_offset::pg_catalog.int4 OPERATOR(pg_catalog.&) 255))
             )::pg_catalog.float8 OPERATOR(pg_catalog.*) '1 s'::pg_catalog.interval) AS processed_at
FROM inbox.markers m
JOIN inbox.consumer_registry r ON r.id OPERATOR(pg_catalog.=) m.consumer_id;
ALTER VIEW inbox.messages ALTER COLUMN processed_at SET DEFAULT pg_catalog.now();
COMMENT ON VIEW inbox.messages IS
    'Markers of processed messages: one row per (consumer, message_id), with the ids exactly as claimed.';

-- The owner of the markers (and only he: nothing is granted) may write them through the view,
-- as into 1.0's table: a migration from another inbox, a restore of selected markers, a test
-- that ages markers. processed_at keeps whole seconds.
CREATE FUNCTION inbox.write_messages() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM inbox.markers m
        USING inbox.consumer_registry r
        WHERE r.name OPERATOR(pg_catalog.=) OLD.consumer
          AND m.consumer_id OPERATOR(pg_catalog.=) r.id
          AND m.message_key OPERATOR(pg_catalog.=) inbox.message_key(OLD.message_id);
        -- What the marker kept (a payload's fingerprint, a result) follows a new time of the
        -- same message, and goes with it otherwise: a later marker must not inherit it.
        IF TG_OP = 'UPDATE' AND NEW.consumer OPERATOR(pg_catalog.=) OLD.consumer COLLATE pg_catalog."C"
           AND NEW.message_id OPERATOR(pg_catalog.=) OLD.message_id COLLATE pg_catalog."C" THEN
            UPDATE inbox.marker_details d
            SET time_bucket = inbox.marker_time_bucket(NEW.processed_at),
                time_offset = inbox.marker_time_offset(NEW.processed_at)
            FROM inbox.consumer_registry r
            WHERE r.name OPERATOR(pg_catalog.=) OLD.consumer
              AND d.consumer_id OPERATOR(pg_catalog.=) r.id
              AND d.message_key OPERATOR(pg_catalog.=) inbox.message_key(OLD.message_id);
        ELSE
            DELETE FROM inbox.marker_details d
            USING inbox.consumer_registry r
            WHERE r.name OPERATOR(pg_catalog.=) OLD.consumer
              AND d.consumer_id OPERATOR(pg_catalog.=) r.id
              AND d.message_key OPERATOR(pg_catalog.=) inbox.message_key(OLD.message_id);
        END IF;
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
    END IF;
    IF NEW.consumer IS NULL OR NEW.message_id IS NULL OR NEW.processed_at IS NULL THEN
        RAISE EXCEPTION 'a marker needs a consumer, a message_id and a processed_at'
        USING ERRCODE = 'not_null_violation';
    END IF;
    INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
    VALUES (inbox.marker_time_bucket(NEW.processed_at), inbox.consumer_id(NEW.consumer),
            inbox.marker_time_offset(NEW.processed_at), inbox.message_key(NEW.message_id));
    RETURN NEW;
END $$;
CREATE TRIGGER write_messages INSTEAD OF INSERT OR UPDATE OR DELETE ON inbox.messages
    FOR EACH ROW EXECUTE FUNCTION inbox.write_messages();

-- Consumers are never renamed or removed while markers may name them: their ids are cached by
-- every backend (a new consumer gets a new id; TRUNCATE of both tables starts afresh).
CREATE FUNCTION inbox.keep_consumer_ids() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION 'consumers cannot be renamed or removed from inbox.consumer_registry'
    USING ERRCODE = 'object_in_use',
          HINT = 'Their ids are in the markers. inbox.configure_consumer changes their settings.';
END $$;
CREATE TRIGGER keep_consumer_ids BEFORE DELETE OR UPDATE OF id, name ON inbox.consumer_registry
    FOR EACH ROW EXECUTE FUNCTION inbox.keep_consumer_ids();

CREATE VIEW inbox.consumers AS
SELECT r.name AS consumer, r.retention, r.max_attempts, r.registered_at
FROM inbox.consumer_registry r;
COMMENT ON VIEW inbox.consumers IS
    'One row per consumer that has claimed or been configured; a NULL retention means inbox.retention.';

CREATE FUNCTION inbox.configure_consumer(consumer text, retention interval DEFAULT NULL,
                                         max_attempts integer DEFAULT NULL)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_configure_consumer';
COMMENT ON FUNCTION inbox.configure_consumer(text, interval, integer) IS
    'Sets a consumer''s own retention and failure limit (NULL: the defaults); registers it when new.';


-- What was granted on 1.0's table and function goes to the view and the function that replace
-- them. An extension script's grants count as the extension's own (pg_init_privs), which pg_dump
-- leaves out of a dump: once these are made, the initial privileges are set back to those of a
-- fresh installation, so that a dump keeps the users' grants.
REVOKE ALL ON inbox.messages FROM PUBLIC;
DO $grants$
DECLARE
    replaced record;
    g record;
    initial pg_catalog.aclitem[];
BEGIN
    FOR replaced IN
        SELECT 'pg_catalog.pg_class'::pg_catalog.regclass AS catalog,
               'inbox.messages'::pg_catalog.regclass::pg_catalog.oid AS object,
               'TABLE inbox.messages' AS target,
               (SELECT c.relacl FROM pg_catalog.pg_class c
                WHERE c.oid OPERATOR(pg_catalog.=) 'inbox.messages_1_0'::pg_catalog.regclass) AS acl
        UNION ALL
        SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass,
               'inbox.stats_counters()'::pg_catalog.regprocedure::pg_catalog.oid,
               'FUNCTION inbox.stats_counters()',
               (SELECT p.proacl FROM pg_catalog.pg_proc p
                WHERE p.oid OPERATOR(pg_catalog.=) 'inbox.stats_counters_1_0()'::pg_catalog.regprocedure)
        UNION ALL
        -- who could read the counters may read the markers' counts, which the view reads too
        SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass,
               'inbox.marker_counts()'::pg_catalog.regprocedure::pg_catalog.oid,
               'FUNCTION inbox.marker_counts()',
               (SELECT p.proacl FROM pg_catalog.pg_proc p
                WHERE p.oid OPERATOR(pg_catalog.=) 'inbox.stats_counters_1_0()'::pg_catalog.regprocedure)
    LOOP
        SELECT i.initprivs INTO initial FROM pg_catalog.pg_init_privs i
        WHERE i.objoid OPERATOR(pg_catalog.=) replaced.object
          AND i.classoid OPERATOR(pg_catalog.=) replaced.catalog
          AND i.objsubid OPERATOR(pg_catalog.=) 0;
        FOR g IN SELECT a.grantee, a.privilege_type, a.is_grantable
                 FROM pg_catalog.aclexplode(replaced.acl) a
                 WHERE a.grantee OPERATOR(pg_catalog.<>) a.grantor LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', g.privilege_type, replaced.target,
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
                CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
        WHERE i.objoid OPERATOR(pg_catalog.=) replaced.object
          AND i.classoid OPERATOR(pg_catalog.=) replaced.catalog
          AND i.objsubid OPERATOR(pg_catalog.=) 0;
    END LOOP;
END
$grants$;
DROP FUNCTION inbox.stats_counters_1_0();
-- Out of the extension first: that also takes it out of the tables pg_dump dumps.
ALTER EXTENSION inbox DROP TABLE inbox.messages_1_0;
DROP TABLE inbox.messages_1_0;

REVOKE ALL ON inbox.markers, inbox.consumer_registry, inbox.consumers FROM PUBLIC;
REVOKE ALL ON SEQUENCE inbox.consumer_registry_id_seq FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.message_key(text),
    inbox.marker_time_bucket(timestamptz), inbox.marker_time_offset(timestamptz), inbox.consumer_id(text),
    inbox.write_messages(), inbox.keep_consumer_ids(),
    inbox.configure_consumer(text, interval, integer) FROM PUBLIC;

-- =============================================================================================
-- Every outcome of a delivery: inbox.receive and inbox.complete, the batches, and the failed
-- attempts that survive a rollback (README, "Outcomes").
-- =============================================================================================

CREATE TYPE inbox.outcome AS ENUM
    ('processed', 'duplicate', 'in_progress', 'payload_mismatch', 'poisoned', 'failed');
COMMENT ON TYPE inbox.outcome IS
    'What became of a delivery: processed (do the work now), duplicate, in_progress, payload_mismatch, poisoned, failed.';
CREATE TYPE inbox.receipt AS (outcome inbox.outcome, result jsonb, attempts integer);
COMMENT ON TYPE inbox.receipt IS
    'The answer of inbox.receive: the outcome, the stored result of a duplicate, the earlier failures.';

-- What a marker keeps beyond itself, only for the markers that use it: the fingerprint of the
-- payload it was received with, and the result stored by inbox.complete. It carries its
-- marker's time, so that the purge takes both together.
CREATE TABLE inbox.marker_details (
    time_bucket integer NOT NULL,
    consumer_id smallint NOT NULL,
    time_offset pg_catalog."char" NOT NULL,
    message_key bytea NOT NULL,
    fingerprint bigint,
    result jsonb,
    CONSTRAINT marker_details_pkey PRIMARY KEY (consumer_id, message_key)
);
CREATE INDEX marker_details_retention ON inbox.marker_details (consumer_id, time_bucket);
COMMENT ON TABLE inbox.marker_details IS
    'Payload fingerprints and stored results of the markers that have them.';
SELECT pg_catalog.pg_extension_config_dump('inbox.marker_details', '');

CREATE FUNCTION inbox.receive(consumer text, message_id text, payload jsonb DEFAULT NULL,
                              wait boolean DEFAULT true)
RETURNS inbox.receipt
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_receive';
COMMENT ON FUNCTION inbox.receive(text, text, jsonb, boolean) IS
    'The claim with every outcome: processed, duplicate (with its stored result), in_progress, payload_mismatch, poisoned.';

CREATE FUNCTION inbox.complete(consumer text, message_id text, result jsonb)
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_complete';
COMMENT ON FUNCTION inbox.complete(text, text, jsonb) IS
    'Stores the result of the work with the marker, in this transaction: every later copy is answered with it.';

CREATE FUNCTION inbox.claim_batch(consumer text, message_ids text[])
RETURNS SETOF text
LANGUAGE c VOLATILE PARALLEL UNSAFE ROWS 100
AS 'MODULE_PATHNAME', 'inbox_claim_batch';
COMMENT ON FUNCTION inbox.claim_batch(text, text[]) IS
    'Claims many messages in one call: the ids claimed now, each once, in the order given.';

CREATE FUNCTION inbox.apply_batch(consumer text, fn regprocedure, messages jsonb)
RETURNS TABLE (message_id text, outcome inbox.outcome, sqlstate text, message text)
LANGUAGE c VOLATILE PARALLEL UNSAFE ROWS 100
AS 'MODULE_PATHNAME', 'inbox_apply_batch';
COMMENT ON FUNCTION inbox.apply_batch(text, regprocedure, jsonb) IS
    'Claims and handles each {"id", "payload"} of a JSON array on its own: a failing handler is rolled back alone.';

CREATE FUNCTION inbox.attempt_entries(OUT consumer_id smallint, OUT message_id text,
                                      OUT failures integer, OUT last_sqlstate text,
                                      OUT last_message text, OUT last_failed_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL SAFE ROWS 10
AS 'MODULE_PATHNAME', 'inbox_attempt_entries';
COMMENT ON FUNCTION inbox.attempt_entries() IS
    'The failed attempts kept for this database (shared memory; none without shared_preload_libraries).';

CREATE VIEW inbox.attempts AS
SELECT r.name AS consumer, a.message_id COLLATE pg_catalog."C" AS message_id,
       a.failures, a.last_sqlstate, a.last_message, a.last_failed_at
FROM inbox.attempt_entries() a
JOIN inbox.consumer_registry r ON r.id OPERATOR(pg_catalog.=) a.consumer_id;
COMMENT ON VIEW inbox.attempts IS
    'Messages whose deliveries failed and are not processed yet: how often, and the last error.';

REVOKE ALL ON inbox.marker_details, inbox.attempts FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.receive(text, text, jsonb, boolean),
    inbox.complete(text, text, jsonb), inbox.claim_batch(text, text[]),
    inbox.apply_batch(text, regprocedure, jsonb), inbox.attempt_entries() FROM PUBLIC;

-- =============================================================================================
-- Dropping and re-creating the extension (README, "Dropping and re-creating the extension").
-- =============================================================================================

-- DROP EXTENSION inbox (or DROP SCHEMA inbox CASCADE) would delete every marker: refused while
-- there are any, unless inbox.allow_drop_with_markers is on.
CREATE FUNCTION inbox.guard_drop() RETURNS event_trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'inbox_guard_drop';
COMMENT ON FUNCTION inbox.guard_drop() IS
    'Refuses to drop the extension with its markers unless inbox.allow_drop_with_markers is on.';
CREATE EVENT TRIGGER inbox_guard_drop ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA')
    EXECUTE FUNCTION inbox.guard_drop();

-- The privileges of a kind of role, on every object of this version that the kind uses: after
-- CREATE EXTENSION (which starts with nothing granted) or an update that added functions.
CREATE FUNCTION inbox.grant_access(grantee regrole, access text) RETURNS void
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
            'inbox.upsert_versioned(regclass, jsonb, name), inbox.insert_once(regclass, jsonb)'
        WHEN 'operate' THEN
            'EXECUTE ON FUNCTION inbox.forget(text, text), inbox.stats_reset(), '
            'inbox.configure_consumer(text, interval, integer)'
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
                                   'inbox.attempt_entries() TO %s', grantee);
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
COMMENT ON FUNCTION inbox.grant_access(regrole, text) IS
    'Grants a role what it needs to consume, operate or monitor: after CREATE EXTENSION or an update.';

REVOKE ALL ON FUNCTION inbox.guard_drop(), inbox.grant_access(regrole, text) FROM PUBLIC;

-- =============================================================================================
-- Distributing with Citus (README, "Distributing with Citus"): the markers and their details
-- hash-distributed together, the consumer registry a reference table, so that every node reads
-- the same consumer ids. Citus stays optional: it is looked up when these run, never required.
-- =============================================================================================

-- Drops the shards of one of the tables above and Citus's metadata of it, on every node, as
-- Citus does for a table dropped with DROP TABLE: Citus's own conversions refuse a table that
-- belongs to an extension, and DROP EXTENSION drops the metadata but leaves the shards. With
-- keep_rows the table keeps its rows, as a plain table of the coordinator.
CREATE FUNCTION inbox.drop_citus_shards(distributed regclass, keep_rows boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    table_name pg_catalog.text := (SELECT c.relname FROM pg_catalog.pg_class c
                                   WHERE c.oid OPERATOR(pg_catalog.=) distributed);
    citus_trigger pg_catalog.name;
BEGIN
    IF keep_rows THEN
        EXECUTE pg_catalog.format('CREATE TEMPORARY TABLE inbox_kept_rows ON COMMIT DROP AS '
                                  'SELECT * FROM %s', distributed);
    END IF;
    PERFORM pg_catalog.master_remove_distributed_table_metadata_from_workers(
        distributed, 'inbox', table_name);
    PERFORM pg_catalog.citus_drop_all_shards(distributed, 'inbox', table_name, false);
    PERFORM pg_catalog.master_remove_partition_metadata(distributed, 'inbox', table_name);
    -- The trigger by which Citus turned a TRUNCATE of the table into one of its shards.
    FOR citus_trigger IN
        SELECT t.tgname FROM pg_catalog.pg_trigger t
        WHERE t.tgrelid OPERATOR(pg_catalog.=) distributed
          AND t.tgfoid OPERATOR(pg_catalog.=) 'pg_catalog.citus_truncate_trigger'::pg_catalog.regproc
    LOOP
        EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', citus_trigger, distributed);
    END LOOP;
    -- What create_distributed_table left behind in the table itself, if it was not truncated.
    EXECUTE pg_catalog.format('TRUNCATE ONLY %s', distributed);
    IF keep_rows THEN
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT * FROM pg_temp.inbox_kept_rows',
                                  distributed);
        DROP TABLE pg_temp.inbox_kept_rows;
    END IF;
END $$;

-- Every Citus table of the store back to a plain table of the coordinator, with its rows or
-- empty; details first (they follow the markers). Nothing but on the coordinator of a Citus
-- cluster.
CREATE FUNCTION inbox.leave_citus(keep_rows boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    distributed pg_catalog.regclass;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN;
    END IF;
    IF (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) OPERATOR(pg_catalog.<>) 0 THEN
        RETURN;
    END IF;
    FOR distributed IN
        SELECT t.distributed
        FROM pg_catalog.unnest(ARRAY['inbox.marker_details', 'inbox.markers',
                                     'inbox.consumer_registry']::pg_catalog.regclass[])
             WITH ORDINALITY AS t(distributed, n)
        WHERE EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                      WHERE p.logicalrelid OPERATOR(pg_catalog.=) t.distributed)
        ORDER BY t.n
    LOOP
        PERFORM inbox.drop_citus_shards(distributed, keep_rows);
    END LOOP;
END $$;

CREATE FUNCTION inbox.assert_coordinator()
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'Citus is not installed in this database'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'CREATE EXTENSION citus on every node, then add the workers on the coordinator.';
    END IF;
    IF (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g) OPERATOR(pg_catalog.<>) 0 THEN
        RAISE EXCEPTION 'this node is a Citus worker'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'Run it on the coordinator.';
    END IF;
END $$;

CREATE FUNCTION inbox.distribute(distribution_column text DEFAULT 'message_key',
                                 shard_count integer DEFAULT NULL,
                                 colocate_with text DEFAULT 'default')
RETURNS void
LANGUAGE plpgsql
-- (Citus's notices would advise truncating the local rows, which this does itself.)
SET search_path = pg_catalog, pg_temp SET client_min_messages = warning AS $$
DECLARE
    unsafe_triggers pg_catalog.text;
    current_column pg_catalog.text;
    current_group pg_catalog.int4;
    current_shards pg_catalog.int4;
    wanted_group pg_catalog.int4;
BEGIN
    PERFORM inbox.assert_coordinator();
    IF distribution_column IS NULL
       OR distribution_column OPERATOR(pg_catalog.<>) ALL (ARRAY['message_key', 'consumer_id']) THEN
        RAISE EXCEPTION 'the markers are distributed by message_key or consumer_id, not by %',
            pg_catalog.coalesce(pg_catalog.quote_literal(distribution_column), 'NULL')
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'message_key spreads every consumer''s markers over all workers; consumer_id '
                     'keeps each consumer''s markers on one.';
    END IF;
    -- The reference tables live on the coordinator too, so that the coordinator reads the
    -- consumer registry locally.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node n WHERE n.groupid OPERATOR(pg_catalog.=) 0) THEN
        RAISE EXCEPTION 'the coordinator is not in Citus''s node list'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'SELECT citus_set_coordinator_host(''<host>'', <port>); then try again.';
    END IF;

    SELECT pg_catalog.column_to_column_name(p.logicalrelid, p.partkey), p.colocationid,
           (SELECT pg_catalog.count(*) FROM pg_catalog.pg_dist_shard s
            WHERE s.logicalrelid OPERATOR(pg_catalog.=) p.logicalrelid)
    INTO current_column, current_group, current_shards
    FROM pg_catalog.pg_dist_partition p
    WHERE p.logicalrelid OPERATOR(pg_catalog.=) 'inbox.markers'::pg_catalog.regclass;
    IF colocate_with OPERATOR(pg_catalog.=) 'default' THEN
        wanted_group := current_group;
    ELSIF colocate_with OPERATOR(pg_catalog.<>) 'none' THEN
        SELECT p.colocationid INTO wanted_group FROM pg_catalog.pg_dist_partition p
        WHERE p.logicalrelid OPERATOR(pg_catalog.=) colocate_with::pg_catalog.regclass;
    END IF;
    IF current_column IS NOT NULL THEN
        IF current_column OPERATOR(pg_catalog.=) distribution_column
           AND (shard_count IS NULL OR shard_count OPERATOR(pg_catalog.=) current_shards)
           AND current_group OPERATOR(pg_catalog.=) wanted_group THEN
            RETURN;  -- distributed so already
        END IF;
        -- Moving the markers: back to the coordinator, then out again.
        PERFORM inbox.drop_citus_shards('inbox.marker_details', true);
        PERFORM inbox.drop_citus_shards('inbox.markers', true);
    END IF;

    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
                   WHERE p.logicalrelid OPERATOR(pg_catalog.=) 'inbox.consumer_registry'::pg_catalog.regclass) THEN
        -- Its trigger only refuses renames and removals: it reads no other table, which is what
        -- makes a trigger unsafe for Citus.
        unsafe_triggers := pg_catalog.current_setting('citus.enable_unsafe_triggers');
        PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
        PERFORM pg_catalog.create_reference_table('inbox.consumer_registry');
        PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', unsafe_triggers, true);
        PERFORM pg_catalog.truncate_local_data_after_distributing_table('inbox.consumer_registry');
    END IF;
    PERFORM pg_catalog.create_distributed_table('inbox.markers', distribution_column,
        colocate_with => distribute.colocate_with, shard_count => distribute.shard_count);
    PERFORM pg_catalog.create_distributed_table('inbox.marker_details', distribution_column,
        colocate_with => 'inbox.markers');
    PERFORM pg_catalog.truncate_local_data_after_distributing_table('inbox.markers');
    PERFORM pg_catalog.truncate_local_data_after_distributing_table('inbox.marker_details');
END $$;
COMMENT ON FUNCTION inbox.distribute(text, integer, text) IS
    'Distributes the markers with Citus (by message_key or consumer_id), or moves them to another distribution; the consumer registry becomes a reference table.';

CREATE FUNCTION inbox.undistribute()
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM inbox.assert_coordinator();
    PERFORM inbox.leave_citus(true);
END $$;
COMMENT ON FUNCTION inbox.undistribute() IS
    'Brings the markers and the consumer registry back to plain tables of the coordinator.';

-- DROP EXTENSION inbox (or DROP SCHEMA inbox CASCADE) on the coordinator drops the shards
-- first: inbox.leave_citus(false). Event triggers fire in the order of their names: this one
-- after inbox_guard_drop, which may refuse the drop while it sees the markers.
CREATE FUNCTION inbox.drop_shards_first()
RETURNS event_trigger
LANGUAGE c
AS 'MODULE_PATHNAME', 'inbox_drop_shards_first';
CREATE EVENT TRIGGER inbox_shards_first ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA')
    EXECUTE FUNCTION inbox.drop_shards_first();

REVOKE ALL ON FUNCTION inbox.drop_citus_shards(regclass, boolean), inbox.leave_citus(boolean),
    inbox.assert_coordinator(), inbox.distribute(text, integer, text),
    inbox.undistribute(), inbox.drop_shards_first() FROM PUBLIC;
