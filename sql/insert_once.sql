-- inbox.insert_once: creation under a known business key; a conflict on it is success, not news.
-- The tables of this file live in their own schema (the regression tests share one database).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
CREATE SCHEMA once;
SET search_path = once, public;

CREATE TYPE channel AS ENUM ('web', 'shop');
CREATE TABLE orders (
    order_no   text PRIMARY KEY,
    customer   uuid NOT NULL,
    total      numeric(12, 2),
    channel    channel,
    items      text[],
    attributes jsonb,
    placed_on  date,
    created_at timestamptz DEFAULT '2024-01-01 00:00:00+00'
);

-- First delivery inserts (absent columns take their defaults); every copy after it is false and
-- changes nothing, even when it carries other values.
SELECT inbox.insert_once('orders', '{"order_no": "A-1", "customer": "00000000-0000-0000-0000-00000000000c",
    "total": 19.999, "channel": "web", "items": ["pen", "ink"], "attributes": {"gift": true},
    "placed_on": "2024-03-01"}') AS first,
       inbox.insert_once('orders', '{"order_no": "A-1", "customer": "00000000-0000-0000-0000-00000000000c",
    "total": 19.999, "channel": "web", "items": ["pen", "ink"], "attributes": {"gift": true},
    "placed_on": "2024-03-01"}') AS again,
       inbox.insert_once('orders', '{"order_no": "A-1", "customer": "00000000-0000-0000-0000-00000000000d",
    "total": 1}') AS different_copy;
SELECT order_no, customer, total, channel, items, attributes, placed_on,
       created_at = '2024-01-01 00:00:00+00' AS default_applied,
       pg_typeof(channel) AS channel_type, pg_typeof(items) AS items_type
FROM orders;

-- Composite keys and identifiers that need quoting.
CREATE TABLE "Line ""Items""" ("Order No" text, "line#" integer, "Qty" integer,
                               PRIMARY KEY ("Order No", "line#"));
SELECT inbox.insert_once('"Line ""Items"""', '{"Order No": "A-1", "line#": 1, "Qty": 2}') AS line_1,
       inbox.insert_once('"Line ""Items"""', '{"Order No": "A-1", "line#": 2, "Qty": 3}') AS line_2,
       inbox.insert_once('"Line ""Items"""', '{"Order No": "A-1", "line#": 1, "Qty": 9}') AS line_1_again;
SELECT * FROM "Line ""Items""" ORDER BY "line#";

-- A conflict on another unique constraint is not the business key: it raises as usual.
CREATE TABLE users (id integer PRIMARY KEY, email text UNIQUE);
SELECT inbox.insert_once('users', '{"id": 1, "email": "a@example.org"}');
SELECT outcome($$SELECT inbox.insert_once('users', '{"id": 2, "email": "a@example.org"}')$$);

-- Bad input: a clear error with its SQLSTATE, and nothing written.
CREATE TABLE no_key (id integer);
SELECT count(*) AS orders_before FROM orders \gset
SELECT statement, outcome(statement) FROM (VALUES
    ($$SELECT inbox.insert_once(NULL, '{"order_no": "B-1"}')$$),
    ($$SELECT inbox.insert_once('orders', NULL)$$),
    ($$SELECT inbox.insert_once('orders', '[]')$$),
    ($$SELECT inbox.insert_once('orders', '42')$$),
    ($$SELECT inbox.insert_once('orders', '{"customer": "00000000-0000-0000-0000-00000000000c"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": null, "customer": "00000000-0000-0000-0000-00000000000c"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "00000000-0000-0000-0000-00000000000c", "coupon": "X"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "c"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "00000000-0000-0000-0000-00000000000c", "channel": "fax"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "00000000-0000-0000-0000-00000000000c", "total": "lots"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "00000000-0000-0000-0000-00000000000c", "placed_on": "someday"}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1", "customer": "00000000-0000-0000-0000-00000000000c", "items": [["a"], "b"]}')$$),
    ($$SELECT inbox.insert_once('orders', '{"order_no": "B-1"}')$$),
    ($$SELECT inbox.insert_once('no_key', '{"id": 1}')$$)
) AS bad(statement);
SELECT count(*) - :orders_before AS orders_written FROM orders;
SELECT count(*) AS rows_written FROM no_key;

-- The caller's privileges: INSERT is needed (UPDATE is not), and row-level security applies.
CREATE ROLE regress_insert_once_writer;
GRANT USAGE ON SCHEMA inbox, once TO regress_insert_once_writer;
GRANT EXECUTE ON FUNCTION inbox.insert_once(regclass, jsonb) TO regress_insert_once_writer;
CREATE TABLE tickets (id integer PRIMARY KEY, owner name DEFAULT current_user, subject text);
SET ROLE regress_insert_once_writer;
SELECT outcome($$SELECT inbox.insert_once('tickets', '{"id": 1, "subject": "no grant yet"}')$$);
RESET ROLE;
GRANT SELECT, INSERT ON tickets TO regress_insert_once_writer;
ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_tickets ON tickets USING (owner = current_user) WITH CHECK (owner = current_user);
SET ROLE regress_insert_once_writer;
SELECT inbox.insert_once('tickets', '{"id": 1, "subject": "mine"}') AS own,
       inbox.insert_once('tickets', '{"id": 1, "subject": "mine again"}') AS own_again;
SELECT outcome($$SELECT inbox.insert_once('tickets', '{"id": 2, "owner": "someone_else", "subject": "theirs"}')$$);
RESET ROLE;
SELECT * FROM tickets;

-- Exactly the privileges the README names: INSERT on the table and SELECT on the key columns,
-- which ON CONFLICT reads; without the latter, 42501.
CREATE ROLE regress_insert_once_minimal;
GRANT USAGE ON SCHEMA inbox, once TO regress_insert_once_minimal;
GRANT EXECUTE ON FUNCTION inbox.insert_once(regclass, jsonb), outcome(text) TO regress_insert_once_minimal;
CREATE TABLE receipts (id integer PRIMARY KEY, amount numeric);
GRANT INSERT ON receipts TO regress_insert_once_minimal;
SET ROLE regress_insert_once_minimal;
SELECT outcome($$SELECT inbox.insert_once('receipts', '{"id": 1, "amount": 5}')$$) AS without_select_on_key;
RESET ROLE;
GRANT SELECT (id) ON receipts TO regress_insert_once_minimal;
SET ROLE regress_insert_once_minimal;
SELECT inbox.insert_once('receipts', '{"id": 1, "amount": 5}') AS created,
       inbox.insert_once('receipts', '{"id": 1, "amount": 6}') AS again;
RESET ROLE;
SELECT * FROM receipts;
DROP TABLE receipts;
DROP OWNED BY regress_insert_once_minimal;
DROP ROLE regress_insert_once_minimal;

-- One kept plan per column set, rebuilt when the table changes.
SELECT count(*) FILTER (WHERE created) AS created
FROM generate_series(1, 40) AS i,
     LATERAL inbox.insert_once('users', jsonb_build_object('id', 100 + i % 10, 'email', i % 10 || '@example.org')) AS created;
SELECT count(*) AS kept_plans FROM pg_backend_memory_contexts
WHERE name = 'CachedPlanSource' AND ident LIKE 'INSERT INTO "once"."users" %';
ALTER TABLE users RENAME COLUMN email TO mail;
SELECT outcome($$SELECT inbox.insert_once('users', '{"id": 200, "email": "x@example.org"}')$$);
SELECT inbox.insert_once('users', '{"id": 200, "mail": "x@example.org"}');
ALTER TABLE users ALTER COLUMN id TYPE bigint;
SELECT inbox.insert_once('users', '{"id": 5000000000, "mail": "big@example.org"}');
SELECT count(*) AS kept_plans FROM pg_backend_memory_contexts
WHERE name = 'CachedPlanSource' AND ident LIKE 'INSERT INTO "once"."users" %';
SELECT * FROM users WHERE id >= 200 ORDER BY id;

RESET search_path;
DROP OWNED BY regress_insert_once_writer;
DROP ROLE regress_insert_once_writer;

-- Clean up: each file leaves the database as it found it.
SET client_min_messages = warning;
DROP SCHEMA once CASCADE;
RESET client_min_messages;
