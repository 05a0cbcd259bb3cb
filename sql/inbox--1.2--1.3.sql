-- inbox 1.3, from 1.2. The one source of what 1.3 changes: the full script inbox--1.3.sql is
-- built from inbox--1.2.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.2 (or 1.1, or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.3'" to load this file. \quit

-- ---- a view replaced with its grants --------------------------------------------------------
-- A view whose columns change is dropped and created again: the roles granted privileges on it
-- (grant_access's 'monitor', a DBA's own GRANT) keep them, and the initial privileges stay those
-- of a fresh installation (pg_dump leaves out what pg_init_privs holds: see 1.2's
-- grant_execute_like). `statements` drops the view, creates it and revokes what a fresh
-- installation revokes. The privileges granted on some of its columns (GRANT SELECT (consumer)
-- ...) are kept too, on the columns that are still there. An object of the user's that depends on
-- the view (a view, a function written with BEGIN ATOMIC) would make the DROP fail with a hint
-- that does not apply (CASCADE): the update stops first, saying what to drop and create again.
-- Used by this script only.
CREATE FUNCTION inbox.replace_view_keeping_grants(target text, statements text)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grants text[];
    column_grants text[];
    dependents text;
    statement text;
    initial pg_catalog.aclitem[];
BEGIN
    SELECT pg_catalog.string_agg(DISTINCT CASE
               WHEN d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
               THEN (SELECT pg_catalog.format('view %s', r.ev_class::pg_catalog.regclass)
                     FROM pg_catalog.pg_rewrite r WHERE r.oid OPERATOR(pg_catalog.=) d.objid)
               ELSE pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) END, ', ')
    INTO dependents
    FROM pg_catalog.pg_depend d
    WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      AND d.refobjid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND d.deptype OPERATOR(pg_catalog.=) 'n'
      -- (not the view's own rule, which reads its columns)
      AND NOT EXISTS (SELECT FROM pg_catalog.pg_rewrite r
                      WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
                        AND r.oid OPERATOR(pg_catalog.=) d.objid
                        AND r.ev_class OPERATOR(pg_catalog.=) target::pg_catalog.regclass);
    IF dependents IS NOT NULL THEN
        RAISE EXCEPTION 'cannot update inbox while other objects depend on %', target
        USING ERRCODE = 'dependent_objects_still_exist',
              DETAIL = pg_catalog.format('Depending on it: %s. The update creates %s again, its '
                                         'columns changed.', dependents, target),
              HINT = 'Drop what depends on it, run ALTER EXTENSION inbox UPDATE, then create it '
                     'again.';
    END IF;
    SELECT pg_catalog.array_agg(pg_catalog.format('GRANT %s ON %s TO %s%s', a.privilege_type, target,
               CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                    ELSE a.grantee::pg_catalog.regrole::pg_catalog.text END,
               CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END))
    INTO grants
    FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
    WHERE c.oid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND a.grantee OPERATOR(pg_catalog.<>) c.relowner;
    -- (the column's name first: granted again only where a column of that name is still there)
    SELECT pg_catalog.array_agg(pg_catalog.format('%s|GRANT %s (%I) ON %s TO %s%s', t.attname,
               a.privilege_type, t.attname, target,
               CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                    ELSE a.grantee::pg_catalog.regrole::pg_catalog.text END,
               CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END))
    INTO column_grants
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_attribute t ON t.attrelid OPERATOR(pg_catalog.=) c.oid
    CROSS JOIN LATERAL pg_catalog.aclexplode(t.attacl) a
    WHERE c.oid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND t.attnum OPERATOR(pg_catalog.>) 0 AND NOT t.attisdropped
      AND a.grantee OPERATOR(pg_catalog.<>) c.relowner;
    EXECUTE statements;
    FOREACH statement IN ARRAY coalesce(column_grants, '{}') LOOP
        IF EXISTS (SELECT FROM pg_catalog.pg_attribute t
                   WHERE t.attrelid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
                     AND t.attname OPERATOR(pg_catalog.=) pg_catalog.split_part(statement, '|', 1)
                     AND NOT t.attisdropped) THEN
            grants := grants || pg_catalog.substr(statement,
                pg_catalog.strpos(statement, '|') OPERATOR(pg_catalog.+) 1);
        END IF;
    END LOOP;
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
    -- (a fresh installation grants nothing on the view's columns: the grants on them are the
    -- user's, which pg_dump dumps)
    DELETE FROM pg_catalog.pg_init_privs i
    WHERE i.objoid OPERATOR(pg_catalog.=) target::pg_catalog.regclass
      AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
      AND i.objsubid OPERATOR(pg_catalog.>) 0;
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
-- against the consumer that lost it: inbox.stats gains attempts_evicted (the view is below).
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

-- ---- configure_consumer changes what it names; reset_consumer; what 'operate' grants ---------
-- Grants made by this script to roles granted an access before the update (format(statement,
-- grantee) for each grantee), the object's initial privileges kept as a fresh installation's: a
-- dump restores the grants themselves. Used by this script only.
CREATE FUNCTION inbox.grant_keeping_initial_privileges(catalog regclass, object oid,
                                                       statement text, grantees regrole[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grantee pg_catalog.regrole;
    initial pg_catalog.aclitem[];
BEGIN
    SELECT i.initprivs INTO initial FROM pg_catalog.pg_init_privs i
    WHERE i.objoid OPERATOR(pg_catalog.=) object
      AND i.classoid OPERATOR(pg_catalog.=) catalog
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
    FOREACH grantee IN ARRAY grantees LOOP
        EXECUTE pg_catalog.format(statement, grantee);
    END LOOP;
    UPDATE pg_catalog.pg_init_privs i SET initprivs = initial
    WHERE i.objoid OPERATOR(pg_catalog.=) object
      AND i.classoid OPERATOR(pg_catalog.=) catalog
      AND i.objsubid OPERATOR(pg_catalog.=) 0;
END $$;

-- A function given to the roles that may execute another (as 1.2's function of the same name).
CREATE FUNCTION inbox.grant_execute_like(model regprocedure, granted regprocedure)
RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$
    SELECT inbox.grant_keeping_initial_privileges(
        'pg_catalog.pg_proc', granted,
        pg_catalog.format('GRANT EXECUTE ON ROUTINE %s TO %%s', granted),
        ARRAY(SELECT a.grantee::pg_catalog.regrole
              FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
              WHERE p.oid OPERATOR(pg_catalog.=) model
                AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
                AND a.grantee OPERATOR(pg_catalog.<>) 0));
$$;

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

-- ---- a handler written without its argument types gets a hint --------------------------------
-- fn is a regprocedure. An untyped literal such as 'credit' goes to these overloads instead (a
-- string is PostgreSQL's preferred reading of it): inbox.handler_named reads 'credit(jsonb)' as
-- regprocedure's input does and answers 'credit' with the signature to write, where
-- regprocedure's input said only "expected a left parenthesis". They run as the caller and call
-- the functions of 1.0, whose grants are the ones that count: anyone may call them (PUBLIC, as
-- PostgreSQL's own functions), and 'consume' access, or a DBA's own GRANT, is still what a call
-- needs. A value typed regprocedure goes to the functions of 1.0 directly.
CREATE FUNCTION inbox.handler_named(fn text) RETURNS regprocedure
LANGUAGE c STABLE PARALLEL SAFE
AS 'MODULE_PATHNAME', 'inbox_handler_named';
COMMENT ON FUNCTION inbox.handler_named(text) IS
    'The function a handler written as text names: ''credit(jsonb)''; ''credit'' is refused '
    'with a hint.';
CREATE FUNCTION inbox.apply(consumer text, message_id text, fn text, payload jsonb DEFAULT NULL)
RETURNS boolean
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $$ SELECT inbox.apply(consumer, message_id, inbox.handler_named(fn), payload) $$;
COMMENT ON FUNCTION inbox.apply(text, text, text, jsonb) IS
    'inbox.apply with fn written as text: ''credit(jsonb)''.';
CREATE FUNCTION inbox.apply_batch(consumer text, fn text, messages jsonb)
RETURNS TABLE (message_id text, outcome inbox.outcome, sqlstate text, message text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE ROWS 100
AS $$ SELECT * FROM inbox.apply_batch(consumer, inbox.handler_named(fn), messages) $$;
COMMENT ON FUNCTION inbox.apply_batch(text, text, jsonb) IS
    'inbox.apply_batch with fn written as text: ''credit(jsonb)''.';

-- ---- the outbox: sending from the same transaction (docs/outbox.md) --------------------------
-- SQL and PL/pgSQL, so that the SQL edition (1.4) serves it as is, but for the library's send (in
-- C, below). The functions run as the extension's owner (SECURITY DEFINER, with a fixed
-- search_path; the library's send switches to its owner itself): a role granted 'consume' may
-- send but never write the table, a role granted 'relay' may lease and settle messages but never
-- change them.
--
-- Two tables: the messages not yet delivered (pending, leased, dead), with everything a relay
-- publishes, and the delivered ones, kept for inbox.outbox_retention without their payload. A
-- delivered message leaves the first for the second (relay_done): the first stays as small as
-- the backlog, so autovacuum soon clears what deliveries leave in its indexes, and a delivery
-- writes a row of a few columns, not a new version of the whole message with its payload.
-- The destination and the key in the C collation, names compared byte for byte as message ids
-- are: equality is the same in every deterministic collation, and each send's entry in the
-- (destination, key, ordinal) index is placed with memcmp, not with the database's strcoll (1 to
-- 2% of a send's instructions under C.UTF-8, more under en_US.UTF-8). What compares them with a
-- caller's text names the collation (relay_take_messages's destinations; the library's take
-- compares in the column's), so that the caller's own collation cannot conflict with it. leased_by, never indexed nor sorted, keeps the default.
CREATE SEQUENCE inbox.outbox_ordinal;
COMMENT ON SEQUENCE inbox.outbox_ordinal IS
    'The order of outgoing messages; within one (destination, key), commit order (inbox.send).';
CREATE TABLE inbox.outbox_messages (
    ordinal bigint NOT NULL,
    created_at timestamptz NOT NULL,
    -- not taken before: the end of its lease while leased, the retry time after a failure
    not_before timestamptz NOT NULL,
    dead_at timestamptz,
    id uuid NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    destination text COLLATE pg_catalog."C" NOT NULL,
    key text COLLATE pg_catalog."C",
    leased_by text,
    headers jsonb,
    payload jsonb,
    payload_bytes bytea,
    last_error text,
    cause_consumer text,
    cause_message_id text,
    -- one of payload and payload_bytes, never both: inbox.send writes one (a CHECK would cost
    -- every send the compilation of its expression)
    CONSTRAINT outbox_messages_pkey PRIMARY KEY (id)
)
-- Room on each page for the lease's new version: relay_take changes no indexed column, so the
-- lease is a HOT update that writes no index entry and leaves no dead one behind.
WITH (fillfactor = 50);
COMMENT ON TABLE inbox.outbox_messages IS
    'Outgoing messages written by inbox.send and not yet delivered, published by a relay '
    '(inbox.relay_take). Read inbox.outbox.';
-- What relay_take scans: the messages in send order (the dead ones too, which outbox_stats
-- counts).
CREATE INDEX outbox_messages_undelivered ON inbox.outbox_messages (ordinal);
-- The head of each key: the earliest message of a (destination, key).
CREATE INDEX outbox_messages_key_order ON inbox.outbox_messages (destination, key, ordinal)
    WHERE key IS NOT NULL;
-- Delivered messages, until the purge: what inbox.outbox shows of them. The ids grow with time
-- (UUIDv7 layout), so the primary key is appended at its right, as a sequence is, and the purge
-- deletes ranges of it (src/purge/purge_outbox.cpp).
CREATE TABLE inbox.outbox_delivered (
    created_at timestamptz NOT NULL,
    delivered_at timestamptz NOT NULL,
    id uuid NOT NULL,
    attempts integer NOT NULL,
    destination text COLLATE pg_catalog."C" NOT NULL,
    key text COLLATE pg_catalog."C",
    last_error text,
    cause_consumer text,
    cause_message_id text,
    CONSTRAINT outbox_delivered_pkey PRIMARY KEY (id)
);
COMMENT ON TABLE inbox.outbox_delivered IS
    'Outgoing messages delivered, without their payload, kept for inbox.outbox_retention. Read '
    'inbox.outbox.';
SELECT pg_catalog.pg_extension_config_dump('inbox.outbox_messages', '');
SELECT pg_catalog.pg_extension_config_dump('inbox.outbox_delivered', '');
SELECT pg_catalog.pg_extension_config_dump('inbox.outbox_ordinal', '');
REVOKE ALL ON inbox.outbox_messages, inbox.outbox_delivered FROM PUBLIC;
REVOKE ALL ON SEQUENCE inbox.outbox_ordinal FROM PUBLIC;

-- Where relay_take starts its scan of the undelivered index. A delivered message's entry stays
-- there until VACUUM, at the index's start, and a scan from the start walks over every message
-- delivered since (autovacuum's rounds are a minute apart: hundreds of thousands of messages at a
-- busy outbox's rate). Invariant: no message with an ordinal below the floor is, or will be,
-- undelivered and not dead. The floor moves up to the lowest such message, no further than a
-- checkpoint (checkpoint_ordinal, checkpoint_xid): the sequence's value, then a transaction id
-- assigned after it was read. A sender takes its transaction id before its ordinal (inbox.send; the
-- sequence hands out its values one at a time, as the order of a key needs already), so once every
-- transaction id below checkpoint_xid has ended (a snapshot's xmin at or above it), every ordinal
-- up to checkpoint_ordinal is of a sender that committed, whose message a scan sees, or rolled
-- back: a transaction that commits after a later-numbered one is never passed. Dead messages do not
-- hold the floor back; relay_release, which makes one pending again, lowers the floor to it. Not
-- dumped: a restored database starts again from 0.
CREATE TABLE inbox.outbox_scan_floor (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),  -- one row (and a replica identity)
    floor bigint NOT NULL,
    checkpoint_ordinal bigint NOT NULL,
    checkpoint_xid xid8 NOT NULL
);
INSERT INTO inbox.outbox_scan_floor (floor, checkpoint_ordinal, checkpoint_xid)
VALUES (0, 0, '0');
COMMENT ON TABLE inbox.outbox_scan_floor IS
    'Where relay_take starts reading the undelivered messages: below the floor none is pending.';
REVOKE ALL ON inbox.outbox_scan_floor FROM PUBLIC;

-- The cause of a message: the latest claim (claim, apply, receive processed, claim_batch's last
-- new id, apply_batch's message whose handler runs) of the sending transaction, or NULLs. Kept
-- per backend by the library (src/claim/claimed_cause.hpp); a claim rolled back to a savepoint
-- leaves no cause until the next claim. Not PUBLIC: inbox.send calls it as the extension's owner.
CREATE FUNCTION inbox.claimed_cause(OUT consumer text, OUT message_id text)
RETURNS record
LANGUAGE c VOLATILE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'inbox_claimed_cause';
COMMENT ON FUNCTION inbox.claimed_cause() IS
    'The consumer and message id of the current transaction''s latest claim (NULLs without one): '
    'the cause inbox.send records.';
REVOKE ALL ON FUNCTION inbox.claimed_cause() FROM PUBLIC;

-- The send, as the SQL edition (1.4, a server that loads no library) serves it: its inbox.send
-- and inbox.send_bytes are SECURITY DEFINER SQL functions with a fixed search_path,
-- SELECT inbox.send_message(destination, payload, NULL, key, headers) and
-- SELECT inbox.send_message(destination, NULL, payload, key, headers). The library's send
-- (src/outbox/send.cpp) does the same in C, at a fraction of the cost; regress
-- outbox_sql_edition holds the two to the same answers, errors, rows, ids and lock. Commit
-- order within a key: the ordinal is taken after a transaction-level lock on (destination, key),
-- held until the sender commits or rolls back, so that of two senders of one key the second
-- numbers its message only after the first ended, and numbering order is commit order. The
-- cost: the senders of one key serialize from their send to their commit. Messages without a key
-- take no lock and have no order. (The library's send, past max_locks_per_transaction keys in a
-- transaction, locks inbox.outbox_messages in SHARE mode instead: src/outbox/key_order_lock.hpp.)
CREATE FUNCTION inbox.send_message(destination text, payload jsonb, payload_bytes bytea,
                                   key text, headers jsonb)
RETURNS uuid
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    id uuid;
    now_ timestamptz := clock_timestamp();
    claimed record;
BEGIN
    -- Refused at once, before any lock: a standby, or a read-only transaction, never sends.
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION 'cannot send a message on a standby'
        USING ERRCODE = 'read_only_sql_transaction',
              HINT = 'inbox.send writes the message in the transaction of the work: run that '
                     'transaction on the primary.';
    END IF;
    IF current_setting('transaction_read_only')::boolean THEN
        RAISE EXCEPTION 'cannot send a message in a read-only transaction'
        USING ERRCODE = 'read_only_sql_transaction',
              HINT = 'inbox.send writes the message: send from a read-write transaction.';
    END IF;
    IF destination IS NULL THEN
        RAISE EXCEPTION 'destination must not be NULL'
        USING ERRCODE = 'null_value_not_allowed',
              HINT = 'The destination names where the relay publishes the message: an exchange, '
                     'an endpoint.';
    ELSIF destination = '' THEN
        RAISE EXCEPTION 'destination must not be empty'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'The destination names where the relay publishes the message: an exchange, '
                     'an endpoint.';
    ELSIF octet_length(destination) > 255 THEN
        RAISE EXCEPTION 'destination is % bytes long, longer than 255', octet_length(destination)
        USING ERRCODE = 'string_data_right_truncation';
    END IF;
    IF key = '' THEN
        RAISE EXCEPTION 'key must not be empty'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Pass NULL (the default) for a message without a key.';
    ELSIF octet_length(key) > 255 THEN
        RAISE EXCEPTION 'key is % bytes long, longer than 255', octet_length(key)
        USING ERRCODE = 'string_data_right_truncation';
    END IF;
    IF payload IS NULL AND payload_bytes IS NULL THEN
        RAISE EXCEPTION 'payload must not be NULL'
        USING ERRCODE = 'null_value_not_allowed',
              HINT = 'A message without a body sends ''{}''::jsonb, ''null''::jsonb or ''''::bytea.';
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
        RAISE EXCEPTION 'headers must be a JSON object, not %', jsonb_typeof(headers)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'For example: ''{"content-type": "application/json"}''.';
    END IF;
    IF key IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(
            octet_length(destination)::text || ':' || destination || key, 7172693807));
    END IF;
    -- A UUIDv7: the milliseconds since 1970 in the first 48 bits, then version 7 and random bits.
    id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                                         PLACING substring(int8send(floor(extract(epoch FROM now_)
                                                                          * 1000)::bigint)
                                                           FROM 3)
                                         FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid;
    SELECT * INTO claimed FROM inbox.claimed_cause();
    -- The transaction's id before the ordinal (inbox.outbox_scan_floor).
    PERFORM pg_current_xact_id();
    INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, id, destination, key,
                                       headers, payload, payload_bytes, cause_consumer,
                                       cause_message_id)
    VALUES (nextval('inbox.outbox_ordinal'), now_, now_, id, destination, key, headers, payload,
            payload_bytes, claimed.consumer, claimed.message_id);
    -- Delivered at commit only (and once per destination per transaction). The library's send
    -- queues it when the transaction commits instead (src/outbox/commit_notification.hpp):
    -- PostgreSQL refuses to PREPARE a transaction that executed NOTIFY, as this body does.
    PERFORM pg_notify('inbox_outbox', destination);
    RETURN id;
END $$;
REVOKE ALL ON FUNCTION inbox.send_message(text, jsonb, bytea, text, jsonb) FROM PUBLIC;

CREATE FUNCTION inbox.send(destination text, payload jsonb, key text DEFAULT NULL,
                           headers jsonb DEFAULT NULL)
RETURNS uuid
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_send';
COMMENT ON FUNCTION inbox.send(text, jsonb, text, jsonb) IS
    'Writes an outgoing message in the caller''s transaction and returns its id; a relay '
    'publishes it after the commit (inbox.relay_take). Messages of one key go out in commit order.';
-- Bytes under a name of their own: an overload send(text, bytea) would make every call with an
-- untyped payload ('{"order": 1}' in SQL, a parameter of a driver that sends no types) ambiguous
-- (42725), jsonb and bytea being equally good targets for an unknown literal.
CREATE FUNCTION inbox.send_bytes(destination text, payload bytea, key text DEFAULT NULL,
                                 headers jsonb DEFAULT NULL)
RETURNS uuid
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_send_bytes';
COMMENT ON FUNCTION inbox.send_bytes(text, bytea, text, jsonb) IS
    'inbox.send with a payload of bytes (relay_take returns it in payload_bytes).';
REVOKE ALL ON FUNCTION inbox.send(text, jsonb, text, jsonb),
    inbox.send_bytes(text, bytea, text, jsonb) FROM PUBLIC;
-- 'consume' includes sending: the roles that may claim may send.
SELECT inbox.grant_execute_like('inbox.claim(text, text)', 'inbox.send(text, jsonb, text, jsonb)');
SELECT inbox.grant_execute_like('inbox.claim(text, text)',
                                'inbox.send_bytes(text, bytea, text, jsonb)');

-- The relay's functions fail at once on a worker node of a Citus cluster, whose own outbox no send
-- fills (src/outbox/relay_on_coordinator.cpp). Not PUBLIC: they call it as the extension's owner.
CREATE FUNCTION inbox.relay_on_coordinator(function text)
RETURNS void
LANGUAGE c VOLATILE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'inbox_relay_on_coordinator';
COMMENT ON FUNCTION inbox.relay_on_coordinator(text) IS
    'Fails (55000) on a Citus worker node: the relay''s functions run on the coordinator.';
REVOKE ALL ON FUNCTION inbox.relay_on_coordinator(text) FROM PUBLIC;

-- inbox.outbox_max_attempts as the relay's functions read it (10 unless set). Without the
-- library the setting is a placeholder: checked here as the library checks it. Not PUBLIC.
CREATE FUNCTION inbox.outbox_max_attempts()
RETURNS integer
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    max_attempts integer := coalesce(nullif(current_setting('inbox.outbox_max_attempts', true),
                                            ''), '10')::integer;
BEGIN
    IF max_attempts < 1 THEN
        RAISE EXCEPTION 'inbox.outbox_max_attempts must be at least 1, not %', max_attempts
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN max_attempts;
END $$;
REVOKE ALL ON FUNCTION inbox.outbox_max_attempts() FROM PUBLIC;

-- The checks of relay_take's arguments, and its scan floor, moved up when its checkpoint has
-- matured (inbox.outbox_scan_floor): where the take's scan starts. The first half of both forms
-- of the take, the library's (src/outbox/relay_take.cpp) and the SQL edition's
-- (inbox.relay_take_messages). Not PUBLIC: relay_take calls it as the extension's owner.
CREATE FUNCTION inbox.relay_take_floor(relay text, max_messages integer, lease interval)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    scan_floor inbox.outbox_scan_floor;
    lowest bigint;
    handed_out bigint;
    sequence_now bigint;
BEGIN
    PERFORM inbox.relay_on_coordinator('inbox.relay_take()');
    IF relay IS NULL OR max_messages IS NULL OR lease IS NULL THEN
        RAISE EXCEPTION 'relay, max_messages and lease must not be NULL'
        USING ERRCODE = 'null_value_not_allowed',
              HINT = 'For example: SELECT * FROM inbox.relay_take(''relay-1'').';
    ELSIF relay = '' OR octet_length(relay) > 255 THEN
        RAISE EXCEPTION 'relay must be a name of 1 to 255 bytes'
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'The name shows which relay holds a lease (inbox.outbox).';
    ELSIF max_messages < 1 THEN
        RAISE EXCEPTION 'max_messages must be at least 1, not %', max_messages
        USING ERRCODE = 'invalid_parameter_value';
    ELSIF lease <= interval '0' THEN
        RAISE EXCEPTION 'lease must be positive, not %', lease
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'Longer than the relay takes to publish a batch: an expired lease hands the '
                     'messages to the next relay.';
    END IF;
    -- What relay_release waits for, until this transaction ends.
    LOCK TABLE inbox.outbox_scan_floor IN ROW SHARE MODE;
    -- The floor, moved up when its checkpoint has matured, by the relay that locks its row (the
    -- others read it as it is); each statement below has a snapshot of its own, taken after the
    -- one before, whose xmin is no lower. The next checkpoint: the sequence's value read before
    -- this transaction has an id, then its id, which the lock of the row gives it (a snapshot's
    -- xmax would not do: it is one past the latest transaction that ended, and a running one
    -- can hold a later id). A transaction that had an id before does not move the floor.
    SELECT * INTO scan_floor FROM inbox.outbox_scan_floor;
    IF pg_snapshot_xmin(pg_current_snapshot()) >= scan_floor.checkpoint_xid
       AND pg_current_xact_id_if_assigned() IS NULL THEN
        SELECT s.last_value - CASE WHEN s.is_called THEN 0 ELSE 1 END INTO handed_out
        FROM inbox.outbox_ordinal s;
        SELECT * INTO scan_floor FROM inbox.outbox_scan_floor FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT * INTO scan_floor FROM inbox.outbox_scan_floor;
        -- The row locked may be newer than the one read, moved by another relay meanwhile: its
        -- own checkpoint must have matured.
        ELSIF pg_snapshot_xmin(pg_current_snapshot()) >= scan_floor.checkpoint_xid THEN
            SELECT m.ordinal INTO lowest FROM inbox.outbox_messages m
            WHERE m.dead_at IS NULL AND m.ordinal >= scan_floor.floor
            ORDER BY m.ordinal LIMIT 1;
            -- The sequence below a checkpoint read from it went back (a data-only restore into a
            -- database that relayed before sets it to the dump's value): its ordinals are handed
            -- out again, and the messages loaded may lie below the floor. It starts again at 0.
            SELECT s.last_value - CASE WHEN s.is_called THEN 0 ELSE 1 END INTO sequence_now
            FROM inbox.outbox_ordinal s;
            UPDATE inbox.outbox_scan_floor
            SET floor = CASE WHEN sequence_now < scan_floor.checkpoint_ordinal THEN 0
                             ELSE least(lowest, scan_floor.checkpoint_ordinal + 1) END,
                checkpoint_ordinal = least(handed_out, sequence_now),
                checkpoint_xid = pg_current_xact_id()
            RETURNING * INTO scan_floor;
        END IF;
    END IF;
    RETURN scan_floor.floor;
END $$;
REVOKE ALL ON FUNCTION inbox.relay_take_floor(text, integer, interval) FROM PUBLIC;

-- Whether a row version the caller sees was written by its own transaction or one of its
-- subtransactions, as the library's take asks TransactionIdIsCurrentTransactionId
-- (src/outbox/direct_take.cpp): in progress and yet seen, it can be no other's. Its xid comes
-- at or after the transaction's own (a subtransaction's is later) and less than 2^31 after it;
-- pg_xact_status wants it with its epoch, counted from the transaction's. An xid frozen long
-- ago that reads as one not yet handed out is not this transaction's (pg_xact_status refuses
-- it, 22023).
CREATE FUNCTION inbox.written_here(row_xmin xid) RETURNS boolean
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    own bigint := pg_current_xact_id_if_assigned()::text::bigint;
    after_own bigint;
BEGIN
    IF own IS NULL THEN
        RETURN false;
    END IF;
    after_own := (row_xmin::text::bigint - own % 4294967296 + 4294967296) % 4294967296;
    IF after_own >= 2147483648 THEN
        RETURN false;
    END IF;
    RETURN pg_xact_status((own + after_own)::text::xid8) = 'in progress';
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END $$;
REVOKE ALL ON FUNCTION inbox.written_here(xid) FROM PUBLIC;

-- relay_take as the SQL edition (1.4, a server that loads no library) serves it: one statement
-- that locks the candidates (SKIP LOCKED) and leases them. The library's relay_take does the same
-- in C (src/outbox/relay_take.cpp), reading the undelivered index once and leasing each message
-- with one update; regress outbox_take_editions holds the two to the same answers. Not PUBLIC.
CREATE FUNCTION inbox.relay_take_messages(relay text, max_messages integer, lease interval,
                                          destinations text[])
RETURNS TABLE (id uuid, destination text, key text, headers jsonb, payload jsonb, attempt integer,
               payload_bytes bytea)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp
-- Whatever the statistics say, the candidates are read in the order of the undelivered index, up
-- to the limit, never sorted from a scan of every pending row; and a batch is too short for JIT.
-- One generic plan from the first call: the plan does not depend on the arguments, and a custom
-- one, planned again at every call, took 3% of a relay's database time.
SET enable_sort = off SET jit = off SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- Whether this transaction wrote before the take (the floor's write comes after): only then
    -- can a candidate's version be its own.
    wrote_before boolean := pg_current_xact_id_if_assigned() IS NOT NULL;
    scan_floor bigint := inbox.relay_take_floor(relay, max_messages, lease);
    max_attempts integer := inbox.outbox_max_attempts();
    now_ timestamptz;
BEGIN
    -- The lease runs from here, after the waits for the floor's lock (a release) and the table's
    -- (a sender of many keys, a backfill): from the call, a take that waited longer than the
    -- lease would hand out leases already expired, the next relay's to take.
    LOCK TABLE inbox.outbox_messages IN ROW EXCLUSIVE MODE;
    now_ := clock_timestamp();
    RETURN QUERY
    WITH candidates AS (
        SELECT m.ctid, m.ordinal FROM inbox.outbox_messages m
        WHERE m.dead_at IS NULL AND m.not_before <= now_
          AND m.ordinal >= scan_floor
          -- not sent, failed or released by this transaction: not committed yet
          AND NOT (wrote_before AND inbox.written_here(m.xmin))
          AND (relay_take_messages.destinations IS NULL
               OR m.destination = ANY (relay_take_messages.destinations COLLATE pg_catalog."C"))
          -- the head of its key, and no other message of the key in flight (a released dead
          -- one goes out again only after the one leased meanwhile is settled)
          AND (m.key IS NULL OR NOT EXISTS (
                SELECT FROM inbox.outbox_messages e
                WHERE e.destination = m.destination AND e.key = m.key AND e.id <> m.id
                  AND e.dead_at IS NULL
                  AND (e.ordinal < m.ordinal
                       OR (e.leased_by IS NOT NULL AND e.not_before > now_))))
        ORDER BY m.ordinal
        LIMIT relay_take_messages.max_messages
        FOR UPDATE OF m SKIP LOCKED
    ),
    -- By row address: a join with the candidates could hash the whole table, and a lookup by
    -- primary key descends its index once a message. A locked candidate cannot move; one updated
    -- since this statement's snapshot (released, failed) is not found at its address and is left
    -- for the next take.
    -- A candidate whose lease expired after inbox.outbox_max_attempts takes (each relay that took
    -- it stopped before settling it: a message that crashes its relay) is dead instead, as
    -- relay_failed makes a message dead after that many: it no longer holds its key back.
    leased AS (
        UPDATE inbox.outbox_messages o
        SET leased_by = CASE WHEN o.leased_by IS NULL OR o.attempts < max_attempts
                             THEN relay_take_messages.relay END,
            not_before = now_ + relay_take_messages.lease,
            attempts = CASE WHEN o.leased_by IS NULL OR o.attempts < max_attempts
                            THEN o.attempts + 1 ELSE o.attempts END,
            dead_at = CASE WHEN o.leased_by IS NOT NULL AND o.attempts >= max_attempts
                           THEN now_ END,
            last_error = CASE WHEN o.leased_by IS NOT NULL AND o.attempts >= max_attempts
                              THEN format('its lease expired %s times: each relay that took it '
                                          'stopped before settling it', o.attempts)
                              ELSE o.last_error END
        WHERE o.ctid = ANY (ARRAY(SELECT c.ctid FROM candidates c))
        RETURNING o.ordinal, o.id, o.destination, o.key, o.headers, o.payload, o.attempts,
                  o.payload_bytes, o.dead_at
    )
    SELECT l.id, l.destination, l.key, l.headers, l.payload, l.attempts, l.payload_bytes
    FROM leased l WHERE l.dead_at IS NULL ORDER BY l.ordinal;
END $$;
REVOKE ALL ON FUNCTION inbox.relay_take_messages(text, integer, interval, text[]) FROM PUBLIC;

-- The relay protocol: take (a lease), then done or failed. Relays side by side take disjoint
-- messages (SKIP LOCKED, and the lease that the taking transaction commits). A keyed message is
-- taken only when it is the head of its key, the earliest undelivered one that is not dead: one
-- message of a key at a time, in commit order. Every committed undelivered message is looked at,
-- whatever its ordinal (no "all below this one is done" watermark, which skips a transaction
-- that commits after a later-numbered one). Called in READ COMMITTED.
CREATE FUNCTION inbox.relay_take(relay text, max_messages integer DEFAULT 100,
                                 lease interval DEFAULT '30 seconds',
                                 destinations text[] DEFAULT NULL)
RETURNS TABLE (id uuid, destination text, key text, headers jsonb, payload jsonb, attempt integer,
               payload_bytes bytea)
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'inbox_relay_take';
COMMENT ON FUNCTION inbox.relay_take(text, integer, interval, text[]) IS
    'Leases committed, undelivered messages to a relay, in send order, one per key at a time and '
    'in commit order within a key; attempt counts this delivery. Then relay_done or relay_failed.';

-- relay_done, relay_failed and relay_release find their messages by primary key, whatever the
-- array's length: one generic plan from the first call, not a custom one planned at each; and
-- whatever the statistics say: taken while few messages waited (the usual state), they make a
-- scan of the whole table look cheaper, and each call would then read every pending message, a
-- batch's settling growing with the backlog.
-- relay_done as the SQL edition (1.4) serves it. The library's relay_done settles directly in C
-- (src/outbox/direct_done.cpp) and calls this one when a trigger or a permission hook asks for
-- the statements; regress outbox_take_editions holds the two to the same answers. Not PUBLIC.
CREATE FUNCTION inbox.relay_done_messages(ids uuid[])
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
    now_ timestamptz := clock_timestamp();
    settled integer;
BEGIN
    PERFORM inbox.relay_on_coordinator('inbox.relay_done()');
    IF ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be NULL'
        USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- (a dead message that a late relay did publish is delivered after all; of two relays that
    -- settle one message, the second finds it gone)
    -- inbox.outbox_retention = 0 keeps no delivered message: deleted, not kept and purged later
    -- (the forms of zero the library's check accepts; unset, the default is 7d).
    IF coalesce(current_setting('inbox.outbox_retention', true), '')
           ~ '^\s*0+\s*(us|ms|s|min|h|d)?\s*$' THEN
        DELETE FROM inbox.outbox_messages m WHERE m.id = ANY (ids);
    ELSE
        WITH delivered AS (
            DELETE FROM inbox.outbox_messages m WHERE m.id = ANY (ids)
            RETURNING m.created_at, m.id, m.attempts, m.destination, m.key, m.last_error,
                      m.cause_consumer, m.cause_message_id
        )
        INSERT INTO inbox.outbox_delivered (created_at, delivered_at, id, attempts, destination,
                                            key, last_error, cause_consumer, cause_message_id)
        SELECT d.created_at, now_, d.id, d.attempts, d.destination, d.key, d.last_error,
               d.cause_consumer, d.cause_message_id
        FROM delivered d;
    END IF;
    GET DIAGNOSTICS settled = ROW_COUNT;
    RETURN settled;
END $$;
REVOKE ALL ON FUNCTION inbox.relay_done_messages(uuid[]) FROM PUBLIC;

CREATE FUNCTION inbox.relay_done(ids uuid[])
RETURNS integer
LANGUAGE c VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'inbox_relay_done';
COMMENT ON FUNCTION inbox.relay_done(uuid[]) IS
    'Marks messages delivered (the broker confirmed them); returns how many were undelivered.';

-- With a relay's name, only the messages that relay still holds: a relay whose lease expired
-- while it published (a sink stalled past the lease), and that then reports a failure, must not
-- end the lease of the relay that took the message since, nor make the message dead under it
-- (its key's next message would go out while it is still being published). inbox-relay names
-- itself. NULL, as the three-argument form: whoever holds them.
CREATE FUNCTION inbox.relay_failed(ids uuid[], error text, retry_after interval, relay text)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
    now_ timestamptz := clock_timestamp();
    max_attempts integer;
    settled integer;
BEGIN
    PERFORM inbox.relay_on_coordinator('inbox.relay_failed()');
    IF ids IS NULL OR retry_after IS NULL THEN
        RAISE EXCEPTION 'ids and retry_after must not be NULL'
        USING ERRCODE = 'null_value_not_allowed';
    ELSIF retry_after < interval '0' THEN
        RAISE EXCEPTION 'retry_after must not be negative, not %', retry_after
        USING ERRCODE = 'invalid_parameter_value';
    END IF;
    max_attempts := inbox.outbox_max_attempts();
    UPDATE inbox.outbox_messages m
    SET last_error = left(error, 1000), leased_by = NULL, not_before = now_ + retry_after,
        dead_at = CASE WHEN m.attempts >= max_attempts THEN now_ END
    WHERE m.id = ANY (ids) AND m.dead_at IS NULL
      AND (relay_failed.relay IS NULL OR m.leased_by = relay_failed.relay);
    GET DIAGNOSTICS settled = ROW_COUNT;
    RETURN settled;
END $$;
COMMENT ON FUNCTION inbox.relay_failed(uuid[], text, interval, text) IS
    'relay_failed for the messages the named relay still holds (a relay whose lease expired '
    'leaves the next holder''s lease alone). Returns how many it held.';

CREATE FUNCTION inbox.relay_failed(ids uuid[], error text,
                                   retry_after interval DEFAULT '10 seconds')
RETURNS integer
LANGUAGE sql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT inbox.relay_failed(ids, error, retry_after, NULL::text) $$;
COMMENT ON FUNCTION inbox.relay_failed(uuid[], text, interval) IS
    'Records a failed delivery: the message is taken again after retry_after, or is dead once '
    'taken inbox.outbox_max_attempts times. Returns how many were pending.';

CREATE FUNCTION inbox.relay_release(ids uuid[])
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off
AS $$
DECLARE
    released integer;
    lowest bigint;
BEGIN
    PERFORM inbox.relay_on_coordinator('inbox.relay_release()');
    IF ids IS NULL THEN
        RAISE EXCEPTION 'ids must not be NULL'
        USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- A dead message at the head of its key again must not go out beside a later message of its
    -- key. A take in flight may be leasing that one (its lease not committed, the next take would
    -- not see it and would take the released one too), or have read the key before this release
    -- and lease it after (its snapshot still shows the released one dead). Every take holds
    -- inbox.outbox_scan_floor in ROW SHARE mode until its transaction ends
    -- (inbox.relay_take_floor): this lock waits for the takes in flight, and the takes that start
    -- meanwhile wait for this transaction to end, their snapshots taken after it. The other
    -- undelivered messages of the keys are then written again, unchanged: a take in REPEATABLE
    -- READ whose snapshot is older fails to serialize on them rather than leasing one.
    LOCK TABLE inbox.outbox_scan_floor IN EXCLUSIVE MODE;
    UPDATE inbox.outbox_messages e SET not_before = e.not_before
    WHERE e.key IS NOT NULL AND e.dead_at IS NULL
      AND (e.destination, e.key) IN (SELECT d.destination, d.key FROM inbox.outbox_messages d
                                     WHERE d.id = ANY (ids) AND d.dead_at IS NOT NULL
                                       AND d.key IS NOT NULL);
    WITH pending_again AS (
        UPDATE inbox.outbox_messages m
        SET dead_at = NULL, attempts = 0, leased_by = NULL, not_before = clock_timestamp()
        WHERE m.id = ANY (ids) AND m.dead_at IS NOT NULL
        RETURNING m.ordinal
    )
    SELECT count(*), min(p.ordinal) INTO released, lowest FROM pending_again p;
    -- Pending again below the floor, perhaps: the floor comes down to it (after a take that moves
    -- the floor meanwhile, which did not see the message pending, this update reads its floor).
    IF lowest IS NOT NULL THEN
        UPDATE inbox.outbox_scan_floor SET floor = least(floor, lowest);
    END IF;
    RETURN released;
END $$;
COMMENT ON FUNCTION inbox.relay_release(uuid[]) IS
    'Gives dead messages a fresh set of attempts: pending again, at the head of their key. '
    'Returns how many were dead.';
REVOKE ALL ON FUNCTION inbox.relay_take(text, integer, interval, text[]),
    inbox.relay_done(uuid[]), inbox.relay_failed(uuid[], text, interval),
    inbox.relay_failed(uuid[], text, interval, text), inbox.relay_release(uuid[]) FROM PUBLIC;

-- The message ids of an owned consumer are its service's data (docs/security.md): the cause of a
-- message shows its message id to the roles that may act for the consumer and to the monitoring
-- roles (pg_read_all_stats), as inbox.attempts does; to other readers, NULL. What is hidden from
-- the caller: read once per query of the view (its scalar subquery), with the caller's own
-- privileges (a reader that may not read inbox.consumers sees no cause's message id).
CREATE FUNCTION inbox.hidden_cause_consumers() RETURNS text[]
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF pg_has_role('pg_read_all_stats', 'USAGE') THEN
        RETURN '{}';
    ELSIF NOT has_table_privilege('inbox.consumers', 'SELECT') THEN
        RETURN NULL;
    END IF;
    RETURN ARRAY(SELECT c.consumer FROM inbox.consumers c
                 WHERE c.owner IS NOT NULL
                   AND NOT EXISTS (SELECT FROM pg_roles r
                                   WHERE r.rolname = c.owner AND pg_has_role(r.oid, 'USAGE')));
END $$;
COMMENT ON FUNCTION inbox.hidden_cause_consumers() IS
    'The owned consumers whose message ids the caller may not see (NULL: every consumer''s), '
    'as inbox.outbox shows its causes.';

CREATE VIEW inbox.outbox AS
SELECT o.id, o.destination, o.key, o.state, o.attempts, o.last_error, o.created_at,
       o.delivered_at, o.cause_consumer,
       -- hidden when the caller's list holds the consumer, or is NULL (every consumer's)
       CASE WHEN (o.cause_consumer OPERATOR(pg_catalog.=)
                  ANY ((SELECT inbox.hidden_cause_consumers())::pg_catalog.text[])) IS NOT FALSE
            THEN NULL ELSE o.cause_message_id END AS cause_message_id,
       o.leased_by, o.not_before, o.dead_at
FROM (
    SELECT m.id, m.destination, m.key,
           CASE WHEN m.dead_at IS NOT NULL THEN 'dead'
                WHEN m.leased_by IS NOT NULL
                     AND m.not_before OPERATOR(pg_catalog.>) pg_catalog.now() THEN 'leased'
                ELSE 'pending' END AS state,
           m.attempts, m.last_error, m.created_at, NULL::timestamptz AS delivered_at,
           m.cause_consumer, m.cause_message_id, m.leased_by,
           CASE WHEN m.dead_at IS NULL THEN m.not_before END AS not_before, m.dead_at
    FROM inbox.outbox_messages m
    UNION ALL
    SELECT d.id, d.destination, d.key, 'delivered', d.attempts, d.last_error, d.created_at,
           d.delivered_at, d.cause_consumer, d.cause_message_id, NULL, NULL, NULL
    FROM inbox.outbox_delivered d
) o;
COMMENT ON VIEW inbox.outbox IS
    'Every outgoing message without its payload: state pending, leased, delivered or dead; '
    'not_before is the end of its lease, or when it is taken again after a failure.';
-- The relay's lag, database-wide, in one row (one number each to alert on); inbox.stats shows it
-- per consumer whose claims caused the messages.
CREATE VIEW inbox.outbox_stats AS
SELECT pg_catalog.count(*) FILTER (WHERE m.dead_at IS NULL) AS pending,
       pg_catalog.count(*) FILTER (WHERE m.dead_at IS NULL AND m.leased_by IS NOT NULL
                                   AND m.not_before OPERATOR(pg_catalog.>) pg_catalog.now())
           AS leased,
       pg_catalog.count(*) FILTER (WHERE m.dead_at IS NOT NULL) AS dead,
       pg_catalog.min(m.created_at) FILTER (WHERE m.dead_at IS NULL) AS oldest_pending_at,
       pg_catalog.now() OPERATOR(pg_catalog.-)
           pg_catalog.min(m.created_at) FILTER (WHERE m.dead_at IS NULL) AS oldest_pending_age
FROM inbox.outbox_messages m;
COMMENT ON VIEW inbox.outbox_stats IS
    'The outbox''s lag: messages not yet delivered (pending, leased among them), dead ones, and '
    'the oldest pending one''s send time and age.';
REVOKE ALL ON inbox.outbox, inbox.outbox_stats FROM PUBLIC;

-- inbox.stats, replaced, not dropped: the grants on the view stay; new columns at the end. The
-- NULL-consumer row (consumers beyond inbox.max_consumers) carries their evictions too.
-- The outbox's lag per consumer (outbox_pending, outbox_oldest_pending_age): the undelivered
-- messages, not dead, that a claim of the consumer caused (inbox.claimed_cause()); those sent
-- outside any claim are the NULL-consumer row's, so that the column's sum is the database's
-- (inbox.outbox_stats.pending). The view reads the outbox through inbox.outbox_counts(), as the
-- table's owner (as marker_counts()), by the partial index of undelivered messages: on Citus, a
-- statement joining the view with the registry, a reference table, has the local table read
-- apart, with the reader's privileges. Executable by PUBLIC, it asks for EXECUTE on
-- inbox.stats_counters() itself, as inbox.stats_counters_1_3() does.
CREATE FUNCTION inbox.outbox_counts(OUT consumer text, OUT pending bigint,
                                    OUT oldest_pending_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED ROWS 10
AS 'MODULE_PATHNAME', 'inbox_outbox_counts';
COMMENT ON FUNCTION inbox.outbox_counts() IS
    'Per cause consumer, the outgoing messages not delivered and not dead, and the oldest one''s '
    'send time; takes EXECUTE on inbox.stats_counters().';
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
outbox AS (
    SELECT o.consumer COLLATE pg_catalog."C" AS consumer, o.pending,
           pg_catalog.now() OPERATOR(pg_catalog.-) o.oldest_pending_at AS oldest_pending_age
    FROM inbox.outbox_counts() o
),
consumers AS (
    SELECT m.consumer FROM markers m
    UNION ALL
    SELECT k.consumer FROM counters k
    WHERE k.consumer IS NOT NULL
      AND NOT EXISTS (SELECT FROM markers m WHERE m.consumer OPERATOR(pg_catalog.=) k.consumer)
    UNION ALL
    SELECT o.consumer FROM outbox o
    WHERE o.consumer IS NOT NULL
      AND NOT EXISTS (SELECT FROM markers m WHERE m.consumer OPERATOR(pg_catalog.=) o.consumer)
      AND NOT EXISTS (SELECT FROM counters k WHERE k.consumer OPERATOR(pg_catalog.=) o.consumer)
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
       coalesce(k.attempts_evicted, untracked.none_counted) AS attempts_evicted,
       coalesce(o.pending, 0::pg_catalog.int8) AS outbox_pending,
       o.oldest_pending_age AS outbox_oldest_pending_age
FROM consumers c
LEFT JOIN counters k ON k.consumer OPERATOR(pg_catalog.=) c.consumer
LEFT JOIN database_counters d ON true
LEFT JOIN markers m ON m.consumer OPERATOR(pg_catalog.=) c.consumer
LEFT JOIN outbox o ON o.consumer OPERATOR(pg_catalog.=) c.consumer
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
-- The NULL-consumer row: when untracked consumers counted something, or messages sent outside
-- any claim wait.
UNION ALL
SELECT NULL, d.applied, d.duplicates,
       d.duplicates::pg_catalog.float8
           OPERATOR(pg_catalog./) nullif(d.applied OPERATOR(pg_catalog.+) d.duplicates, 0),
       NULL, NULL, d.last_duplicate_at, d.stats_reset, d.in_progress, d.payload_mismatches,
       d.poisoned, d.attempts_evicted, coalesce(o.pending, 0::pg_catalog.int8),
       o.oldest_pending_age
FROM (SELECT) one
LEFT JOIN database_counters d ON true
LEFT JOIN outbox o ON o.consumer IS NULL
WHERE d.applied OPERATOR(pg_catalog.>) 0 OR d.duplicates OPERATOR(pg_catalog.>) 0
   OR d.in_progress OPERATOR(pg_catalog.>) 0 OR d.payload_mismatches OPERATOR(pg_catalog.>) 0
   OR d.poisoned OPERATOR(pg_catalog.>) 0 OR d.attempts_evicted OPERATOR(pg_catalog.>) 0
   OR o.pending IS NOT NULL;

-- ---- streams: one position per stream (docs/streams.md) ------------------------------------
-- A consumer of a partitioned log (Kafka, Event Hubs, RabbitMQ streams) or of events numbered per
-- aggregate keeps one committed position per stream instead of a marker per message: nothing to
-- purge, and the position says where to resume. The stream in the C collation (compared byte for
-- byte, as message ids are), in the padding that the position's alignment leaves after the
-- consumer's id: a name of up to 13 bytes costs no more than that padding (a row of 56 bytes on
-- the page for orders/0, not 64), and a claim prunes its page less often.
CREATE TABLE inbox.stream_positions (
    consumer_id smallint NOT NULL,
    stream text COLLATE "C" NOT NULL,
    position bigint NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT stream_positions_pkey PRIMARY KEY (consumer_id, stream)
);
COMMENT ON TABLE inbox.stream_positions IS
    'The committed position of each stream of each consumer (inbox.claim_position). Read '
    'inbox.streams.';
SELECT pg_catalog.pg_extension_config_dump('inbox.stream_positions', '');
REVOKE ALL ON inbox.stream_positions FROM PUBLIC;

CREATE FUNCTION inbox.claim_position(consumer text, stream text, "position" bigint,
                                     contiguous boolean DEFAULT false)
RETURNS text
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_claim_position';
COMMENT ON FUNCTION inbox.claim_position(text, text, bigint, boolean) IS
    'In the caller''s transaction: next (do the work; the stream moves to the position at commit), '
    'duplicate (at or below the committed position: skip) or, when contiguous, gap (a position '
    'before it is missing).';

CREATE FUNCTION inbox.claim_positions(consumer text, stream text, positions bigint[],
                                      contiguous boolean DEFAULT false)
RETURNS bigint[]
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_claim_positions';
COMMENT ON FUNCTION inbox.claim_positions(text, text, bigint[], boolean) IS
    'inbox.claim_position for a polled batch of one stream: returns the positions that are next, '
    'ascending; the stream moves to the last of them at commit.';

-- Not parallel safe: it finds the consumer with a snapshot taken now (GetLatestSnapshot), which
-- PostgreSQL refuses in parallel mode, in a worker and in the leader alike.
CREATE FUNCTION inbox.stream_position(consumer text, stream text)
RETURNS bigint
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_stream_position';
COMMENT ON FUNCTION inbox.stream_position(text, text) IS
    'The committed position of a stream (NULL: never claimed): a consumer resumes after it.';

CREATE FUNCTION inbox.retire_stream(consumer text, stream text)
RETURNS boolean
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'inbox_retire_stream';
COMMENT ON FUNCTION inbox.retire_stream(text, text) IS
    'Deletes a stream''s position (a topic deleted, an aggregate archived): its next claim starts '
    'it afresh. True when it had one.';

CREATE VIEW inbox.streams AS
SELECT r.name AS consumer, s.stream, s.position, s.updated_at
FROM inbox.stream_positions s
JOIN inbox.consumer_registry r ON r.id OPERATOR(pg_catalog.=) s.consumer_id;
COMMENT ON VIEW inbox.streams IS
    'Each stream''s committed position, per consumer, and when it last moved.';
REVOKE ALL ON inbox.streams FROM PUBLIC;

REVOKE ALL ON FUNCTION inbox.claim_position(text, text, bigint, boolean),
    inbox.claim_positions(text, text, bigint[], boolean), inbox.stream_position(text, text),
    inbox.retire_stream(text, text) FROM PUBLIC;
-- 'consume' includes the streams' functions, also for the roles granted it before the update.
SELECT inbox.grant_execute_like('inbox.claim(text, text)',
                                'inbox.claim_position(text, text, bigint, boolean)');
SELECT inbox.grant_execute_like('inbox.claim(text, text)',
                                'inbox.claim_positions(text, text, bigint[], boolean)');
SELECT inbox.grant_execute_like('inbox.claim(text, text)', 'inbox.stream_position(text, text)');
-- 'operate' includes retiring a stream, as it includes forgetting a message.
SELECT inbox.grant_execute_like('inbox.forget(text, text)', 'inbox.retire_stream(text, text)');
-- 1.2's 'consume' includes inbox.message_key(text), which its update gave no role granted
-- 'consume' under 1.1: they get it now.
SELECT inbox.grant_execute_like('inbox.claim(text, text)', 'inbox.message_key(text)');
DROP FUNCTION inbox.grant_execute_like(regprocedure, regprocedure);

-- 'monitor' reads the views 1.3 adds (inbox.outbox, inbox.outbox_stats, inbox.streams), also for
-- the roles granted it before the update: those that may read inbox.stats and inbox.workers, as
-- grant_access(..., 'monitor') let them. The initial privileges stay those of a fresh installation.
SELECT inbox.grant_keeping_initial_privileges(
    'pg_catalog.pg_class', v::pg_catalog.regclass,
    pg_catalog.format('GRANT SELECT ON %s TO %%s', v),
    ARRAY(SELECT a.grantee::pg_catalog.regrole
          FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
          WHERE c.oid OPERATOR(pg_catalog.=) 'inbox.stats'::pg_catalog.regclass
            AND a.privilege_type OPERATOR(pg_catalog.=) 'SELECT'
            AND a.grantee OPERATOR(pg_catalog.<>) c.relowner
            AND a.grantee OPERATOR(pg_catalog.<>) 0
            AND pg_catalog.has_table_privilege(a.grantee, 'inbox.workers', 'SELECT')))
FROM pg_catalog.unnest(ARRAY['inbox.outbox', 'inbox.outbox_stats', 'inbox.streams']) v;
DROP FUNCTION inbox.grant_keeping_initial_privileges(regclass, oid, text, regrole[]);

-- grant_access, replaced in place (its grants stay): 'operate' includes reset_consumer,
-- schedule_purge and unschedule_purge (with pg_cron, the purge it may run by hand) and
-- retire_stream; 'consume' includes send and the streams' claims; 'relay' (new) takes, settles
-- and releases outgoing messages; 'monitor' reads inbox.outbox, inbox.outbox_stats and
-- inbox.streams.
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
            'inbox.message_key(text), inbox.send(text, jsonb, text, jsonb), '
            'inbox.send_bytes(text, bytea, text, jsonb), '
            'inbox.claim_position(text, text, bigint, boolean), '
            'inbox.claim_positions(text, text, bigint[], boolean), '
            'inbox.stream_position(text, text)'
        WHEN 'relay' THEN
            'EXECUTE ON FUNCTION inbox.relay_take(text, integer, interval, text[]), '
            'inbox.relay_done(uuid[]), inbox.relay_failed(uuid[], text, interval), '
            'inbox.relay_failed(uuid[], text, interval, text), inbox.relay_release(uuid[])'
        WHEN 'operate' THEN
            'EXECUTE ON FUNCTION inbox.forget(text, text), inbox.stats_reset(), '
            'inbox.configure_consumer(text, interval, integer, regrole), '
            'inbox.reset_consumer(text, text[]), inbox.schedule_purge(text), '
            'inbox.unschedule_purge(), inbox.retire_stream(text, text)'
        WHEN 'monitor' THEN
            'SELECT ON inbox.stats, inbox.workers, inbox.consumers, inbox.attempts, inbox.outbox, '
            'inbox.outbox_stats, inbox.streams'
    END;
    IF privileges IS NULL THEN
        RAISE EXCEPTION 'access must be consume, relay, operate or monitor, not %', quote_literal(access)
        USING ERRCODE = 'invalid_parameter_value',
              HINT = 'consume: claim, apply, receive, send and the rest of the consumer''s '
                     'calls; relay: relay_take, relay_done, relay_failed, relay_release; '
                     'operate: forget, retire_stream, purge, schedule_purge, '
                     'configure_consumer, reset_consumer, stats_reset; monitor: the views.';
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
