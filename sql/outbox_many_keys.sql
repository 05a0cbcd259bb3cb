-- A transaction that sends to many keys (a backfill) holds a lock per key for the first
-- max_locks_per_transaction of them, then locks inbox.outbox_messages in SHARE mode once: a lock
-- per key would fill the lock table that every session shares (out of shared memory, 53200,
-- after a few thousand keys here).
TRUNCATE inbox.outbox_messages, inbox.outbox_delivered;
SHOW max_locks_per_transaction;
CREATE FUNCTION outbox_locks(OUT key_locks bigint, OUT outbox_modes text)
LANGUAGE sql AS $$
    SELECT count(*) FILTER (WHERE locktype = 'advisory'),
           string_agg(mode, ' ' ORDER BY mode)
               FILTER (WHERE relation = 'inbox.outbox_messages'::regclass)
    FROM pg_locks WHERE pid = pg_backend_pid() AND granted
$$;

BEGIN;
SELECT count(inbox.send('orders', jsonb_build_object('order', g), 'order-' || g)) AS sent
FROM generate_series(1, 64) g;
SELECT * FROM outbox_locks();
SELECT count(inbox.send('orders', jsonb_build_object('order', g), 'order-' || g)) AS sent
FROM generate_series(65, 20000) g;
SELECT * FROM outbox_locks();
COMMIT;

-- Every key is the head of its own: one take leases them all, in send order.
SELECT count(*) AS taken, bool_and((t.payload->>'order')::int = t.position) AS in_send_order
FROM (SELECT payload, row_number() OVER () AS position
      FROM inbox.relay_take('relay', 30000)) t;
TRUNCATE inbox.outbox_messages;

-- The SHARE lock, taken in a savepoint rolled back, is gone with it: the next send of a new key
-- takes it again rather than sending unordered.
BEGIN;
SELECT count(inbox.send('orders', '{}', 'order-' || g)) AS sent FROM generate_series(1, 64) g;
SAVEPOINT bulk;
SELECT inbox.send('orders', '{}', 'order-65') IS NOT NULL AS sent;
SELECT * FROM outbox_locks();
ROLLBACK TO SAVEPOINT bulk;
SELECT * FROM outbox_locks();
SELECT inbox.send('orders', '{}', 'order-66') IS NOT NULL AS sent;
SELECT * FROM outbox_locks();
ROLLBACK;

-- A later transaction starts again from a lock per key.
BEGIN;
SELECT inbox.send('orders', '{}', 'order-1') IS NOT NULL AS sent;
SELECT * FROM outbox_locks();
ROLLBACK;

DROP FUNCTION outbox_locks();
