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
-- Natural idempotency: upsert_versioned and insert_once write any table without a marker.
-- They run with the caller's privileges (not SECURITY DEFINER): GRANTs and row-level security
-- apply as to the same statement written by hand.
-- ---------------------------------------------------------------------------------------------
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
