-- inbox 1.0: the idempotent consumer as a database primitive.
\echo Use "CREATE EXTENSION inbox" to load this file. \quit

-- One row per processed message. The primary key is the arbiter of "first delivery"; "C"
-- collation makes key comparison byte-wise, as message ids are opaque. The key limits (1..64 and
-- 1..128 bytes) are enforced by the functions, the only writers besides the table's owner: as
-- CHECK constraints their expressions were deserialized for every insert: 40% of a claim.
CREATE TABLE inbox.messages (
    consumer     text COLLATE "C" NOT NULL,
    message_id   text COLLATE "C" NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT messages_pkey PRIMARY KEY (consumer, message_id)
);
-- Serves retention (expired markers of each consumer, oldest first) and the per-consumer
-- oldest marker in inbox.stats.
CREATE INDEX messages_consumer_processed_at ON inbox.messages (consumer, processed_at);
COMMENT ON TABLE inbox.messages IS 'Markers of processed messages: one row per (consumer, message_id).';

-- Markers are user data: pg_dump includes them.
SELECT pg_catalog.pg_extension_config_dump('inbox.messages', '');

CREATE FUNCTION inbox.claim(consumer text, message_id text)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_claim';
COMMENT ON FUNCTION inbox.claim(text, text) IS
    'Records (consumer, message_id) in this transaction: true the first time, false for a duplicate.';

CREATE FUNCTION inbox.apply(consumer text, message_id text, fn regprocedure,
                            payload jsonb DEFAULT NULL)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_apply';
COMMENT ON FUNCTION inbox.apply(text, text, regprocedure, jsonb) IS
    'claim, then call fn (payload) in the same transaction when the message is new.';

CREATE FUNCTION inbox.forget(consumer text, message_id text)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_forget';
COMMENT ON FUNCTION inbox.forget(text, text) IS
    'Deletes one marker so that a deliberate redelivery is processed again.';

-- Nothing is open to PUBLIC: a DBA grants USAGE on the schema and EXECUTE on the functions
-- an application needs (see README, "Privileges").
REVOKE ALL ON inbox.messages FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.claim(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.apply(text, text, regprocedure, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.forget(text, text) FROM PUBLIC;

-- =============================================================================================
-- Statistics: the duplicate rate (claim counters in shared memory, library preloaded) and the
-- number of markers retained. See README, "Monitoring".
-- =============================================================================================

CREATE FUNCTION inbox.stats_counters(OUT consumer text, OUT applied bigint,
                                     OUT duplicates bigint, OUT last_duplicate_at timestamptz,
                                     OUT stats_reset timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL SAFE ROWS 10
AS 'MODULE_PATHNAME', 'inbox_stats_counters';
COMMENT ON FUNCTION inbox.stats_counters() IS
    'Claim counters of this database: one row per tracked consumer, then one with a NULL consumer '
    'for consumers beyond inbox.max_consumers. No rows without shared_preload_libraries.';

CREATE FUNCTION inbox.stats_reset()
RETURNS void
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_stats_reset';
COMMENT ON FUNCTION inbox.stats_reset() IS
    'Zeroes the claim counters of this database.';

-- One row per consumer that has markers or counters, and a row with a NULL consumer for the
-- claims of consumers beyond inbox.max_consumers, when there are any. Every part is an index
-- descent or a bounded scan, whatever the size of the inbox (README, "Monitoring").
CREATE VIEW inbox.stats AS
WITH RECURSIVE
-- The distinct consumers of the markers, one index descent each (a "skip scan").
marker_consumers(consumer) AS (
    (SELECT m.consumer FROM inbox.messages m ORDER BY m.consumer LIMIT 1)
    UNION ALL
    SELECT (SELECT m.consumer FROM inbox.messages m
            WHERE m.consumer > c.consumer ORDER BY m.consumer LIMIT 1)
    FROM marker_consumers c WHERE c.consumer IS NOT NULL
),
counters AS (
    SELECT k.consumer COLLATE "C" AS consumer, k.applied, k.duplicates, k.last_duplicate_at,
           k.stats_reset
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
    SELECT CASE WHEN c.reltuples >= 0 AND c.relpages > 0
                THEN c.reltuples / c.relpages
                     * (pg_catalog.pg_relation_size(c.oid)
                        / pg_catalog.current_setting('block_size')::int)
           END AS total_rows
    FROM pg_catalog.pg_class c WHERE c.oid = 'inbox.messages'::pg_catalog.regclass
),
consumer_statistics AS (
    SELECT s.stanullfrac AS null_fraction, s.stadistinct AS distinct_values,
           (CASE 1 WHEN s.stakind1 THEN s.stavalues1 WHEN s.stakind2 THEN s.stavalues2
                   WHEN s.stakind3 THEN s.stavalues3 WHEN s.stakind4 THEN s.stavalues4
                   WHEN s.stakind5 THEN s.stavalues5 END)::text::text[] AS common_values,
           CASE 1 WHEN s.stakind1 THEN s.stanumbers1 WHEN s.stakind2 THEN s.stanumbers2
                  WHEN s.stakind3 THEN s.stanumbers3 WHEN s.stakind4 THEN s.stanumbers4
                  WHEN s.stakind5 THEN s.stanumbers5 END AS common_frequencies
    FROM pg_catalog.pg_statistic s
    JOIN pg_catalog.pg_attribute a ON a.attrelid = s.starelid AND a.attnum = s.staattnum
    WHERE s.starelid = 'inbox.messages'::pg_catalog.regclass AND a.attname = 'consumer'
      AND NOT s.stainherit
),
-- A consumer's share of the rows as the planner estimates it: its frequency in the sample, or
-- else an even share of what the common values leave.
consumer_estimate AS (
    SELECT c.consumer,
           pg_catalog.round(t.total_rows * coalesce(
               s.common_frequencies[pg_catalog.array_position(s.common_values, c.consumer::text COLLATE "C")],
               (1 - s.null_fraction
                  - coalesce((SELECT pg_catalog.sum(f) FROM pg_catalog.unnest(s.common_frequencies) f), 0))
               / greatest(CASE WHEN s.distinct_values >= 0 THEN s.distinct_values
                               ELSE -s.distinct_values * t.total_rows END
                          - coalesce(pg_catalog.cardinality(s.common_values), 0), 1)))::bigint
               AS rows
    FROM consumers c CROSS JOIN table_estimate t CROSS JOIN consumer_statistics s
)
SELECT c.consumer,
       coalesce(k.applied, untracked.none_counted) AS applied,
       coalesce(k.duplicates, untracked.none_counted) AS duplicates,
       coalesce(k.duplicates, untracked.none_counted)::float8
           / nullif(coalesce(k.applied, untracked.none_counted)
                    + coalesce(k.duplicates, untracked.none_counted), 0) AS duplicate_rate,
       -- Exact up to 1000 markers (a bounded index scan), the planner's estimate above: the
       -- estimated cost of the view stays far below jit_above_cost.
       CASE WHEN exact.markers <= 1000 THEN exact.markers
            WHEN e.rows IS NOT NULL THEN greatest(e.rows, 1001) END AS retained,
       (SELECT pg_catalog.min(m.processed_at) FROM inbox.messages m
        WHERE m.consumer = c.consumer) AS oldest_processed_at,
       k.last_duplicate_at,
       d.stats_reset
FROM consumers c
LEFT JOIN counters k ON k.consumer = c.consumer
LEFT JOIN database_counters d ON true
LEFT JOIN consumer_estimate e ON e.consumer = c.consumer
-- A consumer without counters has had no counted claim since stats_reset, unless claims went
-- to the untracked row: then its numbers are unknown.
CROSS JOIN LATERAL (
    SELECT CASE WHEN d.applied = 0 AND d.duplicates = 0 THEN 0::bigint END AS none_counted
) untracked
CROSS JOIN LATERAL (
    SELECT pg_catalog.count(*) AS markers
    FROM (SELECT FROM inbox.messages m WHERE m.consumer = c.consumer LIMIT 1001) bounded
) exact
UNION ALL
SELECT NULL, d.applied, d.duplicates,
       d.duplicates::float8 / nullif(d.applied + d.duplicates, 0),
       NULL, NULL, d.last_duplicate_at, d.stats_reset
FROM database_counters d
WHERE d.applied > 0 OR d.duplicates > 0;
COMMENT ON VIEW inbox.stats IS
    'Per consumer: committed claims, duplicates, their rate, markers retained and the oldest.';

REVOKE ALL ON inbox.stats FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.stats_counters() FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.stats_reset() FROM PUBLIC;

-- =============================================================================================
-- Natural idempotency: upsert_versioned and insert_once write any table without a marker.
-- They run with the caller's privileges (not SECURITY DEFINER): GRANTs and row-level security
-- apply as to the same statement written by hand.
-- =============================================================================================
CREATE FUNCTION inbox.upsert_versioned(target regclass, state jsonb,
                                       version_column name DEFAULT 'version')
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_upsert_versioned';
COMMENT ON FUNCTION inbox.upsert_versioned(regclass, jsonb, name) IS
    'Inserts the row, or updates it when the stored version is lower (or NULL): true when written.';

CREATE FUNCTION inbox.insert_once(target regclass, "row" jsonb)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_insert_once';
COMMENT ON FUNCTION inbox.insert_once(regclass, jsonb) IS
    'Inserts the row; an existing primary key is success without a write (false).';

REVOKE ALL ON FUNCTION inbox.upsert_versioned(regclass, jsonb, name) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.insert_once(regclass, jsonb) FROM PUBLIC;

-- =============================================================================================
-- Retention: purge of expired markers, its workers, and scheduling with pg_cron.
-- Settings: inbox.retention, inbox.purge_batch_size, inbox.purge_interval, inbox.purge_worker.
-- =============================================================================================

CREATE PROCEDURE inbox.purge(INOUT deleted bigint DEFAULT NULL)
LANGUAGE c
AS 'MODULE_PATHNAME', 'inbox_purge';
COMMENT ON PROCEDURE inbox.purge(bigint) IS
    'Deletes markers older than inbox.retention in batches of inbox.purge_batch_size; returns the count.';

CREATE FUNCTION inbox.schedule_purge(schedule text DEFAULT '0 3 * * *')
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_schedule_purge';
COMMENT ON FUNCTION inbox.schedule_purge(text) IS
    'Schedules CALL inbox.purge() with pg_cron as job ''inbox-purge''; returns the job id.';

CREATE FUNCTION inbox.unschedule_purge()
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_unschedule_purge';
COMMENT ON FUNCTION inbox.unschedule_purge() IS
    'Removes the pg_cron job ''inbox-purge''; true when there was one.';

CREATE FUNCTION inbox.worker_status(
    OUT database_oid oid, OUT pid integer, OUT state text,
    OUT last_cycle_start timestamptz, OUT last_cycle_end timestamptz,
    OUT last_cycle_deleted bigint, OUT total_deleted bigint, OUT last_error text)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'inbox_worker_status';

CREATE VIEW inbox.workers AS
    SELECT d.datname AS database, w.pid, w.state, w.last_cycle_start, w.last_cycle_end,
           w.last_cycle_deleted, w.total_deleted, w.last_error
    FROM inbox.worker_status() w
    LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) w.database_oid;
COMMENT ON VIEW inbox.workers IS
    'One row per purge worker (per database with the extension): state and last cycles.';

REVOKE ALL ON PROCEDURE inbox.purge(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.schedule_purge(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.unschedule_purge() FROM PUBLIC;
REVOKE ALL ON FUNCTION inbox.worker_status() FROM PUBLIC;
REVOKE ALL ON inbox.workers FROM PUBLIC;
