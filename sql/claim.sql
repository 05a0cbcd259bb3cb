-- inbox.claim: the marker decides first delivery vs. duplicate, in the caller's transaction.

-- First delivery: true. The same message again: false.
SELECT inbox.claim('billing', 'msg-1') AS first, inbox.claim('billing', 'msg-1') AS again;

-- The consumer is part of the key: another subscriber of the same topic processes it too.
SELECT inbox.claim('shipping', 'msg-1');
SELECT consumer, message_id FROM inbox.messages WHERE message_id = 'msg-1' ORDER BY consumer;

-- A claim that rolls back leaves no marker: the redelivery is processed.
BEGIN;
SELECT inbox.claim('billing', 'msg-2');
ROLLBACK;
SELECT inbox.claim('billing', 'msg-2') AS after_rollback;

-- The same inside a savepoint that is rolled back.
BEGIN;
SAVEPOINT before_claim;
SELECT inbox.claim('billing', 'msg-3');
ROLLBACK TO SAVEPOINT before_claim;
SELECT inbox.claim('billing', 'msg-3') AS after_savepoint_rollback;
COMMIT;

-- Keys compare byte-wise: case, trailing spaces and normalisation forms are distinct ids.
SELECT inbox.claim('billing', 'ABC') AS upper, inbox.claim('billing', 'abc') AS lower,
       inbox.claim('billing', 'abc ') AS trailing_space,
       inbox.claim('billing', U&'\00E9') AS composed, inbox.claim('billing', U&'e\0301') AS decomposed;

-- The largest keys the contract allows: 64-byte consumer, 128-byte message id (multibyte too).
SELECT inbox.claim(repeat('c', 64), repeat('m', 128)) AS longest_ascii,
       inbox.claim(repeat(U&'\00E9', 32), repeat(U&'\00E9', 64)) AS longest_multibyte;

-- processed_at is the claiming transaction's time.
BEGIN;
SELECT inbox.claim('billing', 'msg-4');
SELECT processed_at = now() AS stamped_now FROM inbox.messages WHERE message_id = 'msg-4';
COMMIT;

-- A read-only transaction cannot record a marker.
BEGIN READ ONLY;
SELECT inbox.claim('billing', 'msg-read-only');
ROLLBACK;

-- The marker table: byte-wise keys, primary key, and registered for pg_dump.
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull, collname
FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation AND a.attcollation <> 0
WHERE attrelid = 'inbox.messages'::regclass AND attnum > 0 ORDER BY attnum;
SELECT pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = 'inbox.messages'::regclass AND contype = 'p';
SELECT extconfig::regclass[] AS dumped_tables FROM pg_extension WHERE extname = 'inbox';

-- Functions are not STRICT: a NULL argument must raise, never return NULL ("skip").
SELECT proname, proisstrict FROM pg_proc
WHERE pronamespace = 'inbox'::regnamespace ORDER BY proname;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
