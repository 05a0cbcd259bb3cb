-- inbox 1.0: the idempotent consumer as a database primitive.
\echo Use "CREATE EXTENSION inbox" to load this file. \quit

-- One row per processed message. The primary key is the arbiter of "first delivery"; "C"
-- collation makes key comparison byte-wise, as message ids are opaque.
CREATE TABLE inbox.messages (
    consumer     text COLLATE "C" NOT NULL,
    message_id   text COLLATE "C" NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    CONSTRAINT messages_pkey PRIMARY KEY (consumer, message_id),
    CONSTRAINT messages_consumer_length
        CHECK (pg_catalog.octet_length(consumer) OPERATOR(pg_catalog.<=) 64
               AND consumer OPERATOR(pg_catalog.<>) ''),
    CONSTRAINT messages_message_id_length
        CHECK (pg_catalog.octet_length(message_id) OPERATOR(pg_catalog.<=) 128
               AND message_id OPERATOR(pg_catalog.<>) '')
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

-- ---------------------------------------------------------------------------------------------
-- Retention: purge of expired markers, its workers, and scheduling with pg_cron.
-- Settings: inbox.retention, inbox.purge_batch_size, inbox.purge_interval, inbox.purge_worker.

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
