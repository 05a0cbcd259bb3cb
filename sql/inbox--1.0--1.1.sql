-- inbox 1.0 -> 1.1
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.1'" to load this file. \quit

-- The schema must be the installing role's own. A schema "inbox" that someone else prepared
-- (the CVE-2022-2625 family) would let its owner plant functions that shadow ours for other
-- argument types (inbox.claim(varchar, varchar) is an exact match for drivers that bind strings
-- as varchar), or rename the schema later and put his own inbox.claim in its place. Refused: a
-- schema owned by another role, CREATE on it granted to another role, or objects in it that are
-- not the extension's.
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
              HINT = 'Its owner could replace the extension''s functions. Drop the schema, or '
                     'make it yours (ALTER SCHEMA inbox OWNER TO ' || current_user || ') after '
                     'checking what it contains, then try again.';
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

-- Every name in the view qualified. CREATE OR REPLACE keeps the grants made on 1.0's view.
CREATE OR REPLACE VIEW inbox.stats AS
WITH RECURSIVE
-- The distinct consumers of the markers, one index descent each (a "skip scan").
marker_consumers(consumer) AS (
    (SELECT m.consumer FROM inbox.messages m ORDER BY m.consumer LIMIT 1)
    UNION ALL
    SELECT (SELECT m.consumer FROM inbox.messages m
            WHERE m.consumer OPERATOR(pg_catalog.>) c.consumer ORDER BY m.consumer LIMIT 1)
    FROM marker_consumers c WHERE c.consumer IS NOT NULL
),
counters AS (
    SELECT k.consumer COLLATE pg_catalog."C" AS consumer, k.applied, k.duplicates,
           k.last_duplicate_at, k.stats_reset
    FROM inbox.stats_counters() k
),
-- At most one row; none without the preload. Its counts are those of untracked consumers.
database_counters AS (
    SELECT * FROM counters WHERE consumer IS NULL
),
consumers AS (
    SELECT consumer FROM marker_consumers WHERE consumer IS NOT NULL
    UNION
    SELECT consumer FROM counters WHERE consumer IS NOT NULL
),
-- The planner's view of the marker table: rows per page at the last ANALYZE times the pages now,
-- and the most common consumers with their frequencies in the ANALYZE sample.
table_estimate AS (
    SELECT CASE WHEN c.reltuples OPERATOR(pg_catalog.>=) 0 AND c.relpages OPERATOR(pg_catalog.>) 0
                THEN c.reltuples OPERATOR(pg_catalog./) c.relpages
                     OPERATOR(pg_catalog.*) (pg_catalog.pg_relation_size(c.oid)
                        OPERATOR(pg_catalog./) pg_catalog.current_setting('block_size')::pg_catalog.int4)
           END AS total_rows
    FROM pg_catalog.pg_class c
    WHERE c.oid OPERATOR(pg_catalog.=) 'inbox.messages'::pg_catalog.regclass
),
consumer_statistics AS (
    SELECT s.stanullfrac AS null_fraction, s.stadistinct AS distinct_values,
           (CASE 1 WHEN s.stakind1 THEN s.stavalues1 WHEN s.stakind2 THEN s.stavalues2
                   WHEN s.stakind3 THEN s.stavalues3 WHEN s.stakind4 THEN s.stavalues4
                   WHEN s.stakind5 THEN s.stavalues5 END)::pg_catalog.text::pg_catalog.text[]
               AS common_values,
           CASE 1 WHEN s.stakind1 THEN s.stanumbers1 WHEN s.stakind2 THEN s.stanumbers2
                  WHEN s.stakind3 THEN s.stanumbers3 WHEN s.stakind4 THEN s.stanumbers4
                  WHEN s.stakind5 THEN s.stanumbers5 END AS common_frequencies
    FROM pg_catalog.pg_statistic s
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) s.starelid
                                  AND a.attnum OPERATOR(pg_catalog.=) s.staattnum
    WHERE s.starelid OPERATOR(pg_catalog.=) 'inbox.messages'::pg_catalog.regclass
      AND a.attname OPERATOR(pg_catalog.=) 'consumer'
      AND NOT s.stainherit
),
-- A consumer's share of the rows as the planner estimates it: its frequency in the sample, or
-- else an even share of what the common values leave.
consumer_estimate AS (
    SELECT c.consumer,
           pg_catalog.round(t.total_rows OPERATOR(pg_catalog.*) coalesce(
               s.common_frequencies[pg_catalog.array_position(s.common_values,
                                                              c.consumer::pg_catalog.text COLLATE pg_catalog."C")],
               (1 OPERATOR(pg_catalog.-) s.null_fraction
                  OPERATOR(pg_catalog.-) coalesce((SELECT pg_catalog.sum(f)
                                                   FROM pg_catalog.unnest(s.common_frequencies) f), 0))
               OPERATOR(pg_catalog./) greatest(
                   CASE WHEN s.distinct_values OPERATOR(pg_catalog.>=) 0 THEN s.distinct_values
                        ELSE OPERATOR(pg_catalog.-) s.distinct_values OPERATOR(pg_catalog.*) t.total_rows END
                   OPERATOR(pg_catalog.-) coalesce(pg_catalog.cardinality(s.common_values), 0),
                   1)))::pg_catalog.int8
               AS rows
    FROM consumers c CROSS JOIN table_estimate t CROSS JOIN consumer_statistics s
)
SELECT c.consumer,
       coalesce(k.applied, untracked.none_counted) AS applied,
       coalesce(k.duplicates, untracked.none_counted) AS duplicates,
       coalesce(k.duplicates, untracked.none_counted)::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(coalesce(k.applied, untracked.none_counted)
                    OPERATOR(pg_catalog.+) coalesce(k.duplicates, untracked.none_counted), 0)
           AS duplicate_rate,
       -- Exact up to 1000 markers (a bounded index scan), the planner's estimate above: the
       -- estimated cost of the view stays far below jit_above_cost.
       CASE WHEN exact.markers OPERATOR(pg_catalog.<=) 1000 THEN exact.markers
            WHEN e.rows IS NOT NULL THEN greatest(e.rows, 1001) END AS retained,
       (SELECT pg_catalog.min(m.processed_at) FROM inbox.messages m
        WHERE m.consumer OPERATOR(pg_catalog.=) c.consumer) AS oldest_processed_at,
       k.last_duplicate_at,
       d.stats_reset
FROM consumers c
LEFT JOIN counters k ON k.consumer OPERATOR(pg_catalog.=) c.consumer
LEFT JOIN database_counters d ON true
LEFT JOIN consumer_estimate e ON e.consumer OPERATOR(pg_catalog.=) c.consumer
-- A consumer without counters has had no counted claim since stats_reset, unless claims went
-- to the untracked row: then its numbers are unknown.
CROSS JOIN LATERAL (
    SELECT CASE WHEN d.applied OPERATOR(pg_catalog.=) 0 AND d.duplicates OPERATOR(pg_catalog.=) 0
                THEN 0::pg_catalog.int8 END AS none_counted
) untracked
CROSS JOIN LATERAL (
    SELECT pg_catalog.count(*) AS markers
    FROM (SELECT FROM inbox.messages m WHERE m.consumer OPERATOR(pg_catalog.=) c.consumer LIMIT 1001) bounded
) exact
UNION ALL
SELECT NULL, d.applied, d.duplicates,
       d.duplicates::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(d.applied OPERATOR(pg_catalog.+) d.duplicates, 0),
       NULL, NULL, d.last_duplicate_at, d.stats_reset
FROM database_counters d
WHERE d.applied OPERATOR(pg_catalog.>) 0 OR d.duplicates OPERATOR(pg_catalog.>) 0;
