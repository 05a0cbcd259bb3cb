-- The library's inbox.send and inbox.send_bytes (C) against inbox.send_message, the body the SQL
-- edition (1.4) serves them with: the same answers and errors (SQLSTATE, message, hint), the
-- same rows, the same message id layout and the same lock per (destination, key). A change to
-- either that the other does not follow fails here.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- What one send does: the row it wrote, or its error.
CREATE FUNCTION send_outcome(edition text, destination text, payload jsonb, payload_bytes bytea,
                             key text, headers jsonb, as_bytes boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    sent_id uuid;
    state text;
    message text;
    hint text;
    sent text;
BEGIN
    IF edition = 'library' AND as_bytes THEN
        sent_id := inbox.send_bytes(destination, payload_bytes, key, headers);
    ELSIF edition = 'library' THEN
        sent_id := inbox.send(destination, payload, key, headers);
    ELSIF as_bytes THEN
        sent_id := inbox.send_message(destination, NULL, payload_bytes, key, headers);
    ELSE
        sent_id := inbox.send_message(destination, payload, NULL, key, headers);
    END IF;
    SELECT format('sent %s %s %s %s %s cause %s %s; attempts %s, not_before = created_at %s, '
                  'id v7 with its milliseconds %s',
                  left(m.destination, 8), coalesce(left(m.key, 8), '-'),
                  coalesce(m.headers::text, '-'),
                  coalesce(m.payload::text, '-'), coalesce(encode(m.payload_bytes, 'hex'), '-'),
                  coalesce(m.cause_consumer, '-'), coalesce(m.cause_message_id, '-'), m.attempts,
                  m.not_before = m.created_at,
                  substr(m.id::text, 15, 1) = '7'
                  AND substr(m.id::text, 20, 1) IN ('8', '9', 'a', 'b')
                  AND replace(substr(m.id::text, 1, 13), '-', '')
                      = lpad(to_hex(floor(extract(epoch FROM m.created_at) * 1000)::bigint), 12,
                             '0'))
    INTO sent
    FROM inbox.outbox_messages m WHERE m.id = sent_id
      AND m.dead_at IS NULL AND m.leased_by IS NULL;
    RETURN sent;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            hint = PG_EXCEPTION_HINT;
    RETURN format('%s: %s (%s)', state, message, hint);
END $$;

CREATE TEMPORARY TABLE send_cases (name text, destination text, payload jsonb,
                                   payload_bytes bytea, key text, headers jsonb, as_bytes boolean);
INSERT INTO send_cases VALUES
    ('jsonb, key and headers', 'orders', '{"order": 1}', NULL, 'k-1', '{"type": "OrderPaid"}',
     false),
    ('jsonb alone', 'orders', '"paid"', NULL, NULL, NULL, false),
    ('JSON null', 'orders', 'null', NULL, NULL, NULL, false),
    ('bytes', 'files', NULL, '\x00ff', 'k-2', NULL, true),
    ('no bytes', 'files', NULL, '', NULL, NULL, true),
    ('255 bytes', repeat('é', 127) || 'd', '{}', NULL, repeat('k', 255), '{}', false),
    ('NULL destination', NULL, '{}', NULL, NULL, NULL, false),
    ('empty destination', '', '{}', NULL, NULL, NULL, false),
    ('long destination', repeat('é', 128), '{}', NULL, NULL, NULL, false),
    ('empty key', 'orders', '{}', NULL, '', NULL, false),
    ('long key', 'orders', '{}', NULL, repeat('k', 256), NULL, false),
    ('NULL payload', 'orders', NULL, NULL, NULL, NULL, false),
    ('NULL bytes', 'files', NULL, NULL, NULL, NULL, true),
    ('array headers', 'orders', '{}', NULL, NULL, '[1]', false),
    ('string headers', 'orders', '{}', NULL, NULL, '"h"', false),
    ('JSON null headers', 'orders', '{}', NULL, NULL, 'null', false),
    ('NULL destination before NULL payload', NULL, NULL, NULL, '', '[]', false);

SELECT name, library, library = sql_edition AS same_in_the_sql_edition
FROM send_cases c,
     LATERAL send_outcome('library', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) library,
     LATERAL send_outcome('sql', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) sql_edition
ORDER BY name;

-- The cause: the transaction's latest claim.
BEGIN;
SELECT inbox.claim('regress_edition', 'payment-1') AS claimed;
SELECT name, library, library = sql_edition AS same_in_the_sql_edition
FROM send_cases c,
     LATERAL send_outcome('library', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) library,
     LATERAL send_outcome('sql', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) sql_edition
WHERE name IN ('jsonb alone', 'bytes');
ROLLBACK;

-- A read-only transaction.
BEGIN READ ONLY;
SELECT name, library, library = sql_edition AS same_in_the_sql_edition
FROM send_cases c,
     LATERAL send_outcome('library', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) library,
     LATERAL send_outcome('sql', c.destination, c.payload, c.payload_bytes, c.key, c.headers,
                          c.as_bytes) sql_edition
WHERE name = 'jsonb alone';
ROLLBACK;

-- One lock per (destination, key), the same in both (so that a library's sender and an SQL
-- edition's wait for each other): hashtextextended(octet_length(destination)::text || ':' ||
-- destination || key, 7172693807), as pg_advisory_xact_lock(bigint) takes it. None without a key.
CREATE FUNCTION advisory_locks() RETURNS TABLE (classid oid, objid oid) LANGUAGE sql AS $$
    SELECT l.classid, l.objid FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.objsubid = 1
$$;
BEGIN;
SELECT inbox.send('orders', '{}') IS NOT NULL AS sent_without_key,
       inbox.send_message('orders', '{}', NULL, NULL, NULL) IS NOT NULL AS sql_sent_without_key;
SELECT count(*) AS locks_without_key FROM advisory_locks();
SELECT inbox.send('orders', '{}', 'é-1') IS NOT NULL AS sent;
SELECT l.classid::bigint = (h >> 32) & 4294967295 AND l.objid::bigint = h & 4294967295
       AS lock_of_the_key
FROM advisory_locks() l,
     hashtextextended(octet_length('orders')::text || ':' || 'orders' || 'é-1', 7172693807) h;
SELECT inbox.send_message('orders', '{}', NULL, 'é-1', NULL) IS NOT NULL AS sql_sent,
       inbox.send_bytes('orders', '', 'é-1') IS NOT NULL AS sent_bytes;
SELECT count(*) AS locks_of_one_key FROM advisory_locks();
-- ("ab" + "c" and "a" + "bc" are two keys)
SELECT inbox.send('ab', '{}', 'c') IS NOT NULL, inbox.send('a', '{}', 'bc') IS NOT NULL;
SELECT count(*) AS locks_of_three_keys FROM advisory_locks();
ROLLBACK;
-- (the destination's length in one, two and three digits)
BEGIN;
SELECT count(inbox.send(repeat('d', n), '{}', 'k')) AS sent
FROM unnest(ARRAY[9, 10, 99, 100, 255]) n;
SELECT count(*) AS locks_of_the_keys FROM advisory_locks() l
WHERE EXISTS (SELECT FROM unnest(ARRAY[9, 10, 99, 100, 255]) n,
                   hashtextextended(octet_length(repeat('d', n))::text || ':' || repeat('d', n)
                                    || 'k', 7172693807) h
              WHERE l.classid::bigint = (h >> 32) & 4294967295
                AND l.objid::bigint = h & 4294967295);
ROLLBACK;

-- The library's statement is not resolved through the caller's search_path, which the extension's
-- owner would otherwise run: a nextval of the caller's is not called.
CREATE SCHEMA regress_edition_path;
CREATE FUNCTION regress_edition_path.nextval(regclass) RETURNS bigint LANGUAGE sql
AS $$ SELECT -1::bigint $$;
SET search_path = regress_edition_path, public, pg_catalog;
SELECT inbox.send('orders', '{}') AS sent_id \gset
SELECT ordinal > 0 AS ordinal_from_the_sequence FROM inbox.outbox_messages WHERE id = :'sent_id';
RESET search_path;
DROP SCHEMA regress_edition_path CASCADE;

DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
DROP FUNCTION send_outcome(text, text, jsonb, bytea, text, jsonb, boolean);
DROP FUNCTION advisory_locks();
