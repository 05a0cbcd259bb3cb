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

-- inbox.messages shows each id exactly as it was claimed, whatever form the store keeps it in: a
-- canonical UUID, the same UUID in capitals, without hyphens or in braces (other ids), and the
-- 16-byte text whose bytes are that UUID's 16 bytes. Each is a message of its own.
SELECT id, inbox.claim('billing-ids', id) AS first, inbox.claim('billing-ids', id) AS again
FROM (VALUES ('61626364-6566-6768-696a-6b6c6d6e6f70'), ('61626364-6566-6768-696A-6B6C6D6E6F70'),
             ('6162636465666768696a6b6c6d6e6f70'),
             ('{61626364-6566-6768-696a-6b6c6d6e6f70}'), ('abcdefghijklmnop'),
             ('00000000-0000-0000-0000-000000000000')) AS ids(id);
SELECT message_id FROM inbox.messages WHERE consumer = 'billing-ids' ORDER BY message_id COLLATE "C";
SELECT inbox.forget('billing-ids', 'abcdefghijklmnop') AS forgotten,
       inbox.claim('billing-ids', '61626364-6566-6768-696a-6b6c6d6e6f70') AS uuid_still_duplicate;

-- The largest keys the contract allows: 64-byte consumer, 128-byte message id (multibyte too).
SELECT inbox.claim(repeat('c', 64), repeat('m', 128)) AS longest_ascii,
       inbox.claim(repeat(U&'\00E9', 32), repeat(U&'\00E9', 64)) AS longest_multibyte;

-- processed_at is the claiming transaction's time, in whole seconds.
BEGIN;
SELECT inbox.claim('billing', 'msg-4');
SELECT processed_at = date_trunc('second', now()) AS stamped_now
FROM inbox.messages WHERE message_id = 'msg-4';
COMMIT;

-- A read-only transaction cannot record a marker.
BEGIN READ ONLY;
SELECT inbox.claim('billing', 'msg-read-only');
ROLLBACK;

-- inbox.messages is a view with byte-wise keys over the compact store: inbox.markers, whose
-- primary key (consumer_id, message_key) arbitrates, and the consumer registry. Both tables are
-- registered for pg_dump.
SELECT a.attrelid::regclass AS relation, attname, format_type(atttypid, atttypmod) AS type,
       attnotnull, collname
FROM pg_attribute a LEFT JOIN pg_collation c ON c.oid = a.attcollation AND a.attcollation <> 0
WHERE attrelid IN ('inbox.messages'::regclass, 'inbox.markers'::regclass,
                   'inbox.consumer_registry'::regclass) AND attnum > 0
ORDER BY a.attrelid::regclass::text, attnum;
SELECT conrelid::regclass AS relation, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid IN ('inbox.markers'::regclass, 'inbox.consumer_registry'::regclass)
ORDER BY conrelid::regclass::text, 2;
SELECT pg_get_indexdef(indexrelid) FROM pg_index
WHERE indrelid = 'inbox.markers'::regclass ORDER BY indexrelid::regclass::text;
SELECT extconfig::regclass[] AS dumped_tables FROM pg_extension WHERE extname = 'inbox';
-- Nothing is evaluated per insert: no CHECK, default, trigger or expression index on the markers.
SELECT (SELECT count(*) FROM pg_constraint WHERE conrelid = 'inbox.markers'::regclass AND contype = 'c') AS checks,
       (SELECT count(*) FROM pg_attrdef WHERE adrelid = 'inbox.markers'::regclass) AS defaults,
       (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'inbox.markers'::regclass) AS triggers,
       (SELECT count(*) FROM pg_index WHERE indrelid = 'inbox.markers'::regclass AND indexprs IS NOT NULL) AS expression_indexes;

-- The functions callers use are not STRICT: a NULL argument must raise, never return NULL
-- ("skip"). The internal helpers of the stored forms are.
SELECT proname, proisstrict FROM pg_proc
WHERE pronamespace = 'inbox'::regnamespace ORDER BY proname;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
