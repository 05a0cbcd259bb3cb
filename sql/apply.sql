-- inbox.apply: claim, then run the handler in the same transaction, only for a first delivery.
CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL DEFAULT 0);
INSERT INTO accounts VALUES ('INV-1', 0), ('INV-2', 0);

CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::numeric
    WHERE id = payload ->> 'invoice'
$$;

-- Delivered twice: applied once.
SELECT inbox.apply('billing', 'pay-1', 'credit(jsonb)', '{"invoice": "INV-1", "amount": 4182}');
SELECT inbox.apply('billing', 'pay-1', 'credit(jsonb)', '{"invoice": "INV-1", "amount": 4182}');
SELECT id, balance FROM accounts ORDER BY id;

-- A handler without arguments runs as fn().
CREATE TABLE pings (n int);
CREATE FUNCTION ping() RETURNS void LANGUAGE sql AS 'INSERT INTO pings VALUES (1)';
SELECT inbox.apply('pinger', 'ping-1', 'ping()'), inbox.apply('pinger', 'ping-1', 'ping()');
SELECT count(*) AS pings FROM pings;

-- The handler's return value, whatever its type, is not apply's answer.
CREATE FUNCTION answer(jsonb) RETURNS boolean LANGUAGE sql AS 'SELECT false';
SELECT inbox.apply('answers', 'a-1', 'answer(jsonb)', '{}') AS claimed;

-- A handler error propagates and takes the marker with it: the redelivery processes cleanly.
CREATE FUNCTION reject_payment(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'card declined for %', payload ->> 'invoice' USING ERRCODE = 'P0001';
END $$;
SELECT inbox.apply('billing', 'pay-2', 'reject_payment(jsonb)', '{"invoice": "INV-2"}');
SELECT count(*) AS markers FROM inbox.messages WHERE message_id = 'pay-2';
SELECT inbox.apply('billing', 'pay-2', 'credit(jsonb)', '{"invoice": "INV-2", "amount": 10}');
SELECT id, balance FROM accounts ORDER BY id;

-- Caught by the caller in a PL/pgSQL block, the error still removes the marker (subtransaction).
DO $$
BEGIN
    PERFORM inbox.apply('billing', 'pay-3', 'reject_payment(jsonb)', '{"invoice": "INV-2"}');
EXCEPTION WHEN raise_exception THEN
    RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT count(*) AS markers FROM inbox.messages WHERE message_id = 'pay-3';

-- The handler runs in the caller's transaction: a later rollback undoes both work and marker.
BEGIN;
SELECT inbox.apply('billing', 'pay-4', 'credit(jsonb)', '{"invoice": "INV-2", "amount": 1}');
ROLLBACK;
SELECT balance AS unchanged FROM accounts WHERE id = 'INV-2';
SELECT inbox.apply('billing', 'pay-4', 'credit(jsonb)', '{"invoice": "INV-2", "amount": 1}');
SELECT balance AS credited_once FROM accounts WHERE id = 'INV-2';

-- One call site with several handlers: each row gets its own function.
SELECT i, inbox.apply('mixed', 'm-' || i,
                      CASE WHEN i % 2 = 0 THEN 'credit(jsonb)' ELSE 'ping()' END::regprocedure,
                      jsonb_build_object('invoice', 'INV-1', 'amount', i)) AS claimed
FROM generate_series(1, 4) AS i;
SELECT balance FROM accounts WHERE id = 'INV-1';
SELECT count(*) AS pings FROM pings;

-- A handler that is not STRICT receives a NULL payload; a STRICT one is refused up front.
CREATE FUNCTION note_payload(payload jsonb) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO pings VALUES (CASE WHEN payload IS NULL THEN 100 ELSE 200 END) $$;
SELECT inbox.apply('notes', 'n-1', 'note_payload(jsonb)');
SELECT max(n) FROM pings;
CREATE FUNCTION strict_handler(payload jsonb) RETURNS void LANGUAGE sql STRICT
    AS 'INSERT INTO pings VALUES (300)';
SELECT inbox.apply('notes', 'n-2', 'strict_handler(jsonb)');
SELECT count(*) AS markers FROM inbox.messages WHERE message_id = 'n-2';

-- Handlers may themselves deliver messages.
CREATE FUNCTION fan_out(payload jsonb) RETURNS void LANGUAGE sql AS $$
    SELECT inbox.apply('downstream', payload ->> 'id', 'credit(jsonb)',
                       '{"invoice": "INV-1", "amount": 1000}')
$$;
SELECT inbox.apply('upstream', 'f-1', 'fan_out(jsonb)', '{"id": "f-1"}');
SELECT inbox.apply('upstream', 'f-2', 'fan_out(jsonb)', '{"id": "f-1"}');
SELECT balance FROM accounts WHERE id = 'INV-1';

-- Clean up: each file leaves the database as it found it.
DROP FUNCTION credit(jsonb), ping(), answer(jsonb), reject_payment(jsonb), note_payload(jsonb),
    strict_handler(jsonb), fan_out(jsonb);
DROP TABLE accounts, pings;
DELETE FROM inbox.messages;
