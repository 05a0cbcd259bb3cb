-- inbox.upsert_versioned: a state message with a version is written once, in version order.
-- The tables of this file live in their own schema (the regression tests share one database).
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
CREATE SCHEMA upserts;
SET search_path = upserts, public;
SET TIME ZONE 'UTC';
CREATE TABLE invoices (
    id      integer PRIMARY KEY,
    status  text NOT NULL,
    amount  numeric(10, 2),
    note    text DEFAULT 'created by upsert',
    version bigint
);

-- Absent key: inserted; the columns the state does not carry take their defaults.
SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "open", "amount": 10, "version": 7}');
SELECT * FROM invoices;

-- The same message again, and an older one: nothing written.
SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "open", "amount": 10, "version": 7}') AS repeat,
       inbox.upsert_versioned('invoices', '{"id": 1, "status": "draft", "amount": 5, "version": 6}') AS stale;
SELECT * FROM invoices;

-- A newer one updates the columns it carries, and only those.
SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "paid", "version": 9}');
SELECT * FROM invoices;

-- A NULL stored version counts as lower than any incoming one.
INSERT INTO invoices (id, status, version) VALUES (2, 'imported', NULL);
SELECT inbox.upsert_versioned('invoices', '{"id": 2, "status": "open", "version": 1}');
SELECT id, status, version FROM invoices WHERE id = 2;

-- The default version column is "version"; another one is named by the third argument.
CREATE TABLE shipments (id text PRIMARY KEY, state text, revision integer);
SELECT inbox.upsert_versioned('shipments', '{"id": "s-1", "state": "packed", "revision": 2}', 'revision') AS first,
       inbox.upsert_versioned('shipments', '{"id": "s-1", "state": "created", "revision": 1}', 'revision') AS stale,
       inbox.upsert_versioned('shipments', '{"id": "s-1", "state": "shipped", "revision": 3}', 'revision') AS newer;
SELECT * FROM shipments;

-- Versions of any orderable type: integer, bigint, numeric, timestamptz (and a domain of one).
CREATE DOMAIN positive_version AS integer CHECK (VALUE > 0);
CREATE TABLE versioned_by (kind text PRIMARY KEY, v_int integer, v_big bigint, v_num numeric,
                           v_time timestamptz, v_domain positive_version, payload text);
INSERT INTO versioned_by (kind) VALUES ('int'), ('big'), ('num'), ('time'), ('domain');
SELECT column_name, step, inbox.upsert_versioned('versioned_by',
           jsonb_build_object('kind', kind, column_name, version, 'payload', step), column_name) AS written
FROM (VALUES
    ('int', 'v_int', 1, '10'::jsonb), ('int', 'v_int', 2, '9'), ('int', 'v_int', 3, '11'),
    ('big', 'v_big', 1, '5000000000'), ('big', 'v_big', 2, '4999999999'), ('big', 'v_big', 3, '5000000001'),
    ('num', 'v_num', 1, '1.5'), ('num', 'v_num', 2, '1.25'), ('num', 'v_num', 3, '1.500001'),
    ('time', 'v_time', 1, '"2024-05-01 10:00:00+00"'), ('time', 'v_time', 2, '"2024-05-01 11:59:00+02"'),
    ('time', 'v_time', 3, '"2024-05-01 10:00:00.000001+00"'),
    ('domain', 'v_domain', 1, '2'), ('domain', 'v_domain', 2, '1'), ('domain', 'v_domain', 3, '3')
) AS steps(kind, column_name, step, version)
ORDER BY kind, step;
SELECT * FROM versioned_by ORDER BY kind;

-- Every ordinary column type jsonb can express arrives with its exact PostgreSQL type. When all
-- the columns of a message convert from text, the statement takes typed parameters made with
-- each type's input function; with an array or json column in the message, jsonb_to_record
-- converts the whole row. Both paths convert alike, and both are exercised here.
CREATE TYPE invoice_mood AS ENUM ('calm', 'urgent');
CREATE DOMAIN short_code AS varchar(4) CHECK (VALUE ~ '^[A-Z]+$');
CREATE TABLE typed (
    id uuid PRIMARY KEY, t text, n numeric(6, 3), i integer, b boolean, ts timestamptz, d date,
    j jsonb, e invoice_mood, ints integer[], texts text[], grid integer[][], code short_code,
    version integer
);
SELECT inbox.upsert_versioned('typed', '{
    "id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "t": "plain", "n": 123.4564, "i": 42,
    "b": true, "ts": "2024-02-29T23:59:59.5+01:00", "d": "2024-02-29", "j": {"k": [1, null]},
    "e": "urgent", "ints": [1, 2, 3], "texts": ["a", "b c"], "grid": [[1, 2], [3, 4]],
    "code": "ABC", "version": 1}');
SELECT inbox.upsert_versioned('typed', '{
    "id": "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "t": "plain", "n": 123.4564, "i": 42,
    "b": true, "ts": "2024-02-29T23:59:59.5+01:00", "d": "2024-02-29", "e": "urgent",
    "code": "ABC", "version": 1}');
SELECT id, t, n, i, b, ts, d, j, e, ints, texts, grid, code, version,
       pg_typeof(j) AS j_type, pg_typeof(e) AS e_type, pg_typeof(ints) AS ints_type
FROM typed ORDER BY id;
SELECT ident LIKE '%jsonb_to_record%' AS via_jsonb_to_record, ident LIKE '%VALUES ($1,%' AS via_typed_parameters
FROM pg_backend_memory_contexts
WHERE name = 'CachedPlanSource' AND ident LIKE 'INSERT INTO "upserts"."typed" %'
ORDER BY 1;

-- A value that does not convert to its column type is an error, never a silent NULL: on the
-- typed-parameter path (the message has scalars only) and on the jsonb_to_record path (it also
-- carries an array).
SELECT path, column_name, outcome(format(
    $$SELECT inbox.upsert_versioned('typed', '{"id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", %s%s, "version": 2}')$$,
    to_json(column_name)::text || ': ' || value, extra))
FROM (VALUES ('typed parameters', ''), ('jsonb_to_record', ', "texts": ["t"]')) AS paths(path, extra),
     (VALUES ('id', '"not-a-uuid"'), ('n', '1234.5'), ('n', '"twelve"'), ('i', '"forty"'),
             ('i', '4.5'), ('i', '{"a": 1}'), ('b', '"maybe"'), ('ts', '"yesterday-ish"'),
             ('d', '"2024-02-30"'), ('e', '"sleepy"'), ('code', '"abcde"'), ('code', '"ab"'))
     AS bad(column_name, value)
ORDER BY column_name, value, path;
SELECT outcome($$SELECT inbox.upsert_versioned('typed', '{"id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ints": ["x"], "version": 2}')$$),
       outcome($$SELECT inbox.upsert_versioned('typed', '{"id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "ints": [[1], 2], "version": 2}')$$),
       outcome($$SELECT inbox.upsert_versioned('typed', '{"id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "version": "two"}')$$);
SELECT version, t FROM typed ORDER BY id;

-- Text from a json string and numeric from a json number are made without the text in between,
-- and every parameter carries its column's typmod (the statement adds no coercion of its own):
-- every value is the one jsonb_to_record makes (digits, scale, rounding and limits of the
-- typmod), and the other json kinds for those columns still go through the input function.
CREATE TABLE direct_inputs (id integer PRIMARY KEY, t text, n numeric, nt numeric(5, 2),
                            vc varchar(3), ts timestamp(0), version integer);
CREATE TABLE direct_messages (message jsonb);
INSERT INTO direct_messages VALUES
    ('{"id": 1, "t": "a \"quoted\" \u00fc", "n": 1.500, "nt": 2.345, "vc": "abc", "ts": "2024-01-01 10:00:00.6", "version": 1}'),
    ('{"id": 2, "t": 12.50, "n": "7.10", "nt": 1e2, "vc": 12, "version": 1}'),
    ('{"id": 3, "t": true, "n": -0.0, "nt": "-1.005", "vc": "ab ", "version": 1}'),
    ('{"id": 4, "t": "", "n": 12345678901234567890.123456789, "nt": null, "version": 1}');
SELECT count(*) FILTER (WHERE inbox.upsert_versioned('direct_inputs', message)) AS written
FROM direct_messages;
SELECT stored::text, stored::text = converted::text AS as_jsonb_to_record
FROM direct_messages,
     LATERAL jsonb_to_record(message) AS converted(id integer, t text, n numeric,
                                                   nt numeric(5, 2), vc varchar(3),
                                                   ts timestamp(0), version integer)
     JOIN direct_inputs AS stored USING (id)
ORDER BY id;
SELECT outcome($$SELECT inbox.upsert_versioned('direct_inputs', '{"id": 5, "nt": 999.995, "version": 1}')$$),
       outcome($$SELECT * FROM jsonb_to_record('{"nt": 999.995}') AS r(nt numeric(5, 2))$$);
SELECT outcome($$SELECT inbox.upsert_versioned('direct_inputs', '{"id": 5, "vc": "abcd", "version": 1}')$$),
       outcome($$SELECT * FROM jsonb_to_record('{"vc": "abcd"}') AS r(vc varchar(3))$$);
DROP TABLE direct_inputs, direct_messages;
-- The json row is read where jsonb stores it: in a wide object (from its 17th pair on, jsonb keeps
-- some entries' offsets rather than their lengths), values of every json kind, some aligned,
-- arrive as jsonb_populate_record makes them.
SELECT format('CREATE TABLE wide (id integer PRIMARY KEY, version integer, %s)',
              string_agg(format('c%s %s', i, (ARRAY['text', 'numeric', 'boolean'])[i % 3 + 1]),
                         ', ' ORDER BY i))
FROM generate_series(1, 40) AS i \gexec
CREATE TABLE wide_messages (message jsonb);
INSERT INTO wide_messages
SELECT jsonb_build_object('id', shift, 'version', 1)
       || jsonb_object_agg('c' || i, CASE i % 3
              WHEN 0 THEN (ARRAY[to_jsonb(repeat('x', i)), '{"nested": [1, "a"]}', '[1, 2.5]',
                                 '12.5', 'true', 'null'])[(i + shift) % 6 + 1]
              WHEN 1 THEN (ARRAY[to_jsonb(i * 1.5), '"7.25"', 'null', '-0.0'])[(i + shift) % 4 + 1]
              ELSE (ARRAY['true', 'false', '"yes"', 'null'])[(i + shift) % 4 + 1]::jsonb END)
FROM generate_series(1, 40) AS i, generate_series(1, 3) AS shift
GROUP BY shift;
SELECT count(*) FILTER (WHERE inbox.upsert_versioned('wide', message)) AS written
FROM wide_messages;
SELECT count(*) FILTER (WHERE stored::text = jsonb_populate_record(NULL::wide, message)::text)
           AS as_jsonb_populate_record
FROM wide_messages JOIN wide AS stored ON stored.id = (message ->> 'id')::integer;
DROP TABLE wide, wide_messages;

-- Only the columns the state carries are converted: a NOT NULL domain column it leaves out takes
-- its default, while an explicit null is rejected by the domain. Generated columns cannot be set.
CREATE DOMAIN required_text AS text NOT NULL;
CREATE TABLE tasks (id integer PRIMARY KEY, stage required_text DEFAULT 'new',
                    doubled integer GENERATED ALWAYS AS (id * 2) STORED, version integer);
SELECT inbox.upsert_versioned('tasks', '{"id": 1, "version": 1}');
SELECT outcome($$SELECT inbox.upsert_versioned('tasks', '{"id": 1, "stage": null, "version": 2}')$$);
SELECT outcome($$SELECT inbox.upsert_versioned('tasks', '{"id": 1, "doubled": 5, "version": 2}')$$);
SELECT * FROM tasks;

-- Composite primary keys and identifiers with mixed case, spaces and quotes, in a schema whose
-- name needs quoting too.
CREATE SCHEMA "Billing ""EU""";
CREATE TABLE "Billing ""EU"""."Invoice Lines" (
    "Tenant" uuid,
    "line No." integer,
    "Amount ""net""" numeric,
    "Version" timestamptz,
    PRIMARY KEY ("Tenant", "line No.")
);
SELECT inbox.upsert_versioned('"Billing ""EU"""."Invoice Lines"',
    '{"Tenant": "00000000-0000-0000-0000-000000000001", "line No.": 1, "Amount \"net\"": 5, "Version": "2024-01-01"}',
    'Version') AS line_1,
       inbox.upsert_versioned('"Billing ""EU"""."Invoice Lines"',
    '{"Tenant": "00000000-0000-0000-0000-000000000001", "line No.": 2, "Amount \"net\"": 6, "Version": "2024-01-01"}',
    'Version') AS line_2,
       inbox.upsert_versioned('"Billing ""EU"""."Invoice Lines"',
    '{"Tenant": "00000000-0000-0000-0000-000000000001", "line No.": 1, "Amount \"net\"": 7, "Version": "2024-01-02"}',
    'Version') AS line_1_newer,
       inbox.upsert_versioned('"Billing ""EU"""."Invoice Lines"',
    '{"Tenant": "00000000-0000-0000-0000-000000000001", "line No.": 2, "Amount \"net\"": 0, "Version": "2023-12-31"}',
    'Version') AS line_2_stale;
SELECT * FROM "Billing ""EU"""."Invoice Lines" ORDER BY "line No.";

-- Partitioned tables work like plain ones.
CREATE TABLE readings (sensor integer, day date, value numeric, version integer,
                       PRIMARY KEY (sensor, day)) PARTITION BY RANGE (day);
CREATE TABLE readings_2024 PARTITION OF readings FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
SELECT inbox.upsert_versioned('readings', '{"sensor": 1, "day": "2024-03-01", "value": 1, "version": 1}') AS first,
       inbox.upsert_versioned('readings', '{"sensor": 1, "day": "2024-03-01", "value": 2, "version": 2}') AS newer,
       inbox.upsert_versioned('readings', '{"sensor": 1, "day": "2024-03-01", "value": 0, "version": 1}') AS stale;
SELECT * FROM readings_2024;

-- Bad input: a clear error with its SQLSTATE, and nothing written.
CREATE TABLE no_key (id integer, version integer);
CREATE TABLE deferred_key (id integer PRIMARY KEY DEFERRABLE, version integer);
CREATE TABLE unordered (id integer PRIMARY KEY, version point);
CREATE VIEW invoices_view AS SELECT * FROM invoices;
CREATE SEQUENCE invoice_numbers;
SELECT count(*) AS rows_before, sum(version) AS versions_before FROM invoices \gset
SELECT statement, outcome(statement) FROM (VALUES
    ($$SELECT inbox.upsert_versioned(NULL, '{"id": 3, "status": "x", "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', NULL)$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 3, "status": "x", "version": 1}', NULL)$$),
    ($$SELECT inbox.upsert_versioned('invoices', '[{"id": 3, "status": "x", "version": 1}]')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '"text"')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"status": "x", "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": null, "status": "x", "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 3, "status": "x"}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 3, "status": "x", "version": null}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": 99, "colour": "red"}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": 99, "ctid": "(0,1)"}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": 99, "Status": "x"}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', format('{"id": 1, "version": 99, "%s": 1}', repeat('x', 70))::jsonb)$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": 99}', 'revision')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": 99}', 'id')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": null, "version": 99}')$$),
    ($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "status": "x", "version": "ninety"}')$$),
    ($$SELECT inbox.upsert_versioned('no_key', '{"id": 1, "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('deferred_key', '{"id": 1, "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('unordered', '{"id": 1, "version": "(1,2)"}')$$),
    ($$SELECT inbox.upsert_versioned('invoices_view', '{"id": 3, "status": "x", "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned('invoice_numbers', '{"id": 3, "version": 1}')$$),
    ($$SELECT inbox.upsert_versioned(4294967295::oid::regclass, '{"id": 3, "version": 1}')$$)
) AS bad(statement);
SELECT count(*) - :rows_before AS rows_written, sum(version) - :versions_before AS versions_changed
FROM invoices;
SELECT count(*) AS rows_written FROM no_key;
SELECT count(*) AS rows_written FROM unordered;

-- A json key cannot inject SQL, and neither can a hostile search_path: every name in the
-- statement is quoted and schema-qualified, the comparison is OPERATOR(pg_catalog.<).
SELECT outcome($$SELECT inbox.upsert_versioned('invoices', '{"id": 1, "version\" = 0; DROP TABLE invoices; --": 1, "version": 100}')$$);
CREATE TABLE "weird ""; DROP TABLE invoices; --" ("id"") OR 1=1 --" integer PRIMARY KEY, "version" integer);
SELECT inbox.upsert_versioned('"weird ""; DROP TABLE invoices; --"', '{"id\") OR 1=1 --": 1, "version": 1}');
SELECT * FROM "weird ""; DROP TABLE invoices; --";
CREATE SCHEMA hostile;
CREATE FUNCTION hostile.always_lower(bigint, bigint) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR hostile.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hostile.always_lower);
CREATE FUNCTION hostile.jsonb_to_record(jsonb) RETURNS record LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'hostile jsonb_to_record ran'; END $$;
CREATE TABLE hostile.invoices (id integer PRIMARY KEY, status text, version bigint);
SET search_path = hostile, pg_catalog, upserts, public;
SELECT inbox.upsert_versioned('upserts.invoices', '{"id": 1, "status": "replayed", "version": 8}') AS stale_despite_hostile_path;
SET search_path = upserts, public;
SELECT id, status, version FROM invoices WHERE id = 1;
SELECT count(*) AS hostile_rows FROM hostile.invoices;

-- Privileges are the caller's: INSERT and UPDATE on the table are needed, as for the same
-- statement written by hand, and row-level security applies.
CREATE ROLE regress_upsert_writer;
GRANT USAGE ON SCHEMA inbox, upserts TO regress_upsert_writer;
GRANT EXECUTE ON FUNCTION inbox.upsert_versioned(regclass, jsonb, name) TO regress_upsert_writer;
CREATE TABLE accounts (id integer PRIMARY KEY, owner name, balance numeric, version integer);
INSERT INTO accounts VALUES (1, 'regress_upsert_writer', 10, 1), (2, 'someone_else', 20, 1);
GRANT SELECT, INSERT ON accounts TO regress_upsert_writer;
SET ROLE regress_upsert_writer;
SELECT outcome($$SELECT inbox.upsert_versioned('accounts', '{"id": 1, "owner": "regress_upsert_writer", "balance": 11, "version": 2}')$$) AS without_update;
RESET ROLE;
GRANT UPDATE ON accounts TO regress_upsert_writer;
ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON accounts USING (owner = current_user) WITH CHECK (owner = current_user);
SET ROLE regress_upsert_writer;
SELECT inbox.upsert_versioned('accounts', '{"id": 1, "owner": "regress_upsert_writer", "balance": 11, "version": 2}') AS own_row;
SELECT outcome($$SELECT inbox.upsert_versioned('accounts', '{"id": 2, "owner": "someone_else", "balance": 0, "version": 2}')$$) AS other_row;
SELECT outcome($$SELECT inbox.upsert_versioned('accounts', '{"id": 3, "owner": "someone_else", "balance": 0, "version": 1}')$$) AS new_row_for_other;
RESET ROLE;
-- the plan cache analyses the statement again for another role (row-level security depends on
-- it), with the same typed parameters
SELECT inbox.upsert_versioned('accounts', '{"id": 2, "owner": "someone_else", "balance": 21, "version": 3}') AS owner_writes_any_row;
SET ROLE regress_upsert_writer;
SELECT inbox.upsert_versioned('accounts', '{"id": 1, "owner": "regress_upsert_writer", "balance": 12.5, "version": 3}') AS own_row_again;
RESET ROLE;
SELECT * FROM accounts ORDER BY id;

-- Exactly the privileges the README names, and no more: INSERT and UPDATE on the table, and
-- SELECT on the key columns (ON CONFLICT reads them) and on the version column (compared with
-- the stored one). The other columns need no SELECT, in both forms of the statement.
CREATE ROLE regress_upsert_minimal;
GRANT USAGE ON SCHEMA inbox, upserts TO regress_upsert_minimal;
GRANT EXECUTE ON FUNCTION inbox.upsert_versioned(regclass, jsonb, name), outcome(text)
    TO regress_upsert_minimal;
CREATE TABLE balances (id integer PRIMARY KEY, amount numeric, memo text, tags text[], version integer);
GRANT INSERT, UPDATE ON balances TO regress_upsert_minimal;
GRANT SELECT (id, version) ON balances TO regress_upsert_minimal;
SET ROLE regress_upsert_minimal;
SELECT inbox.upsert_versioned('balances', '{"id": 1, "amount": 5, "version": 1}') AS inserted,
       inbox.upsert_versioned('balances', '{"id": 1, "amount": 7, "memo": "m", "version": 2}') AS updated,
       inbox.upsert_versioned('balances', '{"id": 1, "amount": 1, "version": 1}') AS stale,
       inbox.upsert_versioned('balances', '{"id": 1, "tags": ["t"], "version": 3}') AS updated_from_json;
RESET ROLE;
SELECT * FROM balances;
REVOKE SELECT (version) ON balances FROM regress_upsert_minimal;
SET ROLE regress_upsert_minimal;
SELECT outcome($$SELECT inbox.upsert_versioned('balances', '{"id": 1, "amount": 9, "version": 4}')$$) AS without_select_on_version;
RESET ROLE;
REVOKE UPDATE ON balances FROM regress_upsert_minimal;
GRANT SELECT (version) ON balances TO regress_upsert_minimal;
SET ROLE regress_upsert_minimal;
SELECT outcome($$SELECT inbox.upsert_versioned('balances', '{"id": 1, "amount": 9, "version": 4}')$$) AS without_update;
RESET ROLE;
DROP TABLE balances;
DROP OWNED BY regress_upsert_minimal;
DROP ROLE regress_upsert_minimal;

-- Plans are kept per (table, columns, version column): many calls, one plan per column set.
CREATE FUNCTION kept_plans(target text) RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM pg_backend_memory_contexts
    WHERE name = 'CachedPlanSource' AND ident LIKE 'INSERT INTO ' || target || ' %' $$;
SELECT count(*) FILTER (WHERE written) AS written
FROM generate_series(1, 50) AS i,
     LATERAL inbox.upsert_versioned('shipments', jsonb_build_object('id', 'bulk-' || i % 5, 'state', 'v' || i, 'revision', i), 'revision') AS written;
SELECT kept_plans('"upserts"."shipments"') AS plans_for_one_column_set;
SELECT inbox.upsert_versioned('shipments', '{"id": "s-2", "revision": 1}', 'revision');
SELECT kept_plans('"upserts"."shipments"') AS plans_for_two_column_sets;

-- The table changes: the plans made from its old shape are dropped and rebuilt, never reused.
ALTER TABLE shipments RENAME COLUMN state TO stage;
SELECT inbox.upsert_versioned('shipments', '{"id": "s-1", "stage": "delivered", "revision": 4}', 'revision');
SELECT outcome($$SELECT inbox.upsert_versioned('shipments', '{"id": "s-1", "state": "lost", "revision": 5}', 'revision')$$);
SELECT kept_plans('"upserts"."shipments"') AS plans_after_rename;
ALTER TABLE shipments ALTER COLUMN revision TYPE numeric;
SELECT inbox.upsert_versioned('shipments', '{"id": "s-1", "stage": "returned", "revision": 4.5}', 'revision');
ALTER TABLE shipments ADD COLUMN carrier text;
SELECT inbox.upsert_versioned('shipments', '{"id": "s-1", "carrier": "post", "revision": 6}', 'revision');
ALTER TABLE shipments RENAME TO parcels;
SELECT inbox.upsert_versioned('parcels', '{"id": "s-1", "stage": "kept", "revision": 7}', 'revision');
SELECT * FROM parcels WHERE id = 's-1';
SELECT kept_plans('"upserts"."shipments"') AS plans_under_old_name;
-- (the jsonb_to_record form names the column types: a renamed type rebuilds it too)
ALTER TYPE invoice_mood RENAME TO ticket_mood;
SELECT inbox.upsert_versioned('typed', '{"id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "e": "calm", "texts": ["x"], "version": 3}');
SELECT e, texts, version FROM typed WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
ALTER SCHEMA "Billing ""EU""" RENAME TO "Billing";
SELECT inbox.upsert_versioned('"Billing"."Invoice Lines"',
    '{"Tenant": "00000000-0000-0000-0000-000000000001", "line No.": 1, "Amount \"net\"": 8, "Version": "2024-01-03"}',
    'Version');
SELECT * FROM "Billing"."Invoice Lines" ORDER BY "line No.";
ALTER TABLE parcels DROP CONSTRAINT shipments_pkey;
SELECT outcome($$SELECT inbox.upsert_versioned('parcels', '{"id": "s-1", "stage": "x", "revision": 8}', 'revision')$$);
DROP TABLE parcels;
CREATE TABLE parcels (id integer PRIMARY KEY, stage text, revision integer);
SELECT inbox.upsert_versioned('parcels', '{"id": 1, "stage": "new table", "revision": 1}', 'revision');
SELECT * FROM parcels;
-- The same within one transaction: our own DDL is seen at once.
BEGIN;
ALTER TABLE parcels RENAME COLUMN stage TO phase;
SELECT inbox.upsert_versioned('parcels', '{"id": 1, "phase": "same transaction", "revision": 2}', 'revision');
ROLLBACK;
SELECT * FROM parcels;
-- Column names are remembered per place of a key in the message: two columns that swap names
-- between two messages of the same shape are found anew (the version compared is the new "a").
CREATE TABLE swapped (id integer PRIMARY KEY, a integer, b integer);
SELECT inbox.upsert_versioned('swapped', '{"id": 1, "a": 1, "b": 10}', 'a');
ALTER TABLE swapped RENAME COLUMN a TO c;
ALTER TABLE swapped RENAME COLUMN b TO a;
ALTER TABLE swapped RENAME COLUMN c TO b;
SELECT inbox.upsert_versioned('swapped', '{"id": 1, "a": 5, "b": 20}', 'a') AS older_than_new_a;
SELECT inbox.upsert_versioned('swapped', '{"id": 1, "a": 11, "b": 20}', 'a') AS newer_than_new_a;
SELECT * FROM swapped;
-- other shapes: another name at a remembered place, a name that is no column
SELECT inbox.upsert_versioned('swapped', '{"id": 1, "b": 30, "a": 12}', 'a');
SELECT inbox.upsert_versioned('swapped', '{"id": 1, "a": 13}', 'a');
SELECT outcome($$SELECT inbox.upsert_versioned('swapped', '{"id": 1, "c": 40, "a": 14}', 'a')$$);
SELECT * FROM swapped;
DROP TABLE swapped;
-- A row whose keys are all found at their remembered places runs the statement of the last row
-- read, which wrote the same columns: unless a failed call changed a place in between (here "b"
-- replaces "a" before the null version fails), or the last statement was of another kind.
CREATE TABLE places (id integer PRIMARY KEY, a integer, b integer, version integer);
SELECT inbox.upsert_versioned('places', '{"id": 1, "a": 1, "version": 1}');
SELECT outcome($$SELECT inbox.upsert_versioned('places', '{"id": 1, "b": 2, "version": null}')$$);
SELECT inbox.upsert_versioned('places', '{"id": 1, "b": 3, "version": 2}');
SELECT * FROM places;
SELECT inbox.insert_once('places', '{"id": 1, "b": 4, "version": 3}') AS inserted,
       inbox.upsert_versioned('places', '{"id": 1, "b": 5, "version": 4}') AS updated,
       inbox.insert_once('places', '{"id": 2, "b": 6, "version": 5}') AS inserted;
SELECT * FROM places ORDER BY id;
DROP TABLE places;

-- A write rolled back with its transaction leaves nothing behind: the redelivery writes it.
BEGIN;
SELECT inbox.upsert_versioned('parcels', '{"id": 2, "stage": "in a transaction", "revision": 1}', 'revision');
ROLLBACK;
SELECT inbox.upsert_versioned('parcels', '{"id": 2, "stage": "redelivered", "revision": 1}', 'revision');
SELECT * FROM parcels ORDER BY id;

-- A call nested in another one (here from a trigger) may find every statement stale, e.g. after
-- a schema rename inside the trigger: the statement still running is kept until it finishes and
-- freed afterwards.
CREATE SCHEMA nested_a;
CREATE TABLE nested_a.events (id integer PRIMARY KEY, version integer);
CREATE TABLE event_log (id integer PRIMARY KEY, version integer);
CREATE FUNCTION log_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ALTER SCHEMA nested_a RENAME TO nested_b;
    PERFORM inbox.upsert_versioned('upserts.event_log', jsonb_build_object('id', NEW.id, 'version', NEW.version));
    RAISE NOTICE 'statements kept for the running upsert: %', upserts.kept_plans('"nested_a"."events"');
    ALTER SCHEMA nested_b RENAME TO nested_a;
    RETURN NULL;
END $$;
CREATE TRIGGER log_event AFTER INSERT OR UPDATE ON nested_a.events
    FOR EACH ROW EXECUTE FUNCTION log_event();
SELECT inbox.upsert_versioned('nested_a.events', '{"id": 1, "version": 1}') AS first,
       inbox.upsert_versioned('nested_a.events', '{"id": 1, "version": 2}') AS second,
       inbox.upsert_versioned('nested_a.events', '{"id": 1, "version": 2}') AS repeat;
SELECT * FROM nested_a.events;
SELECT * FROM event_log;
SELECT kept_plans('"nested_a"."events"') AS plans_for_events;

RESET TIME ZONE;
RESET search_path;
DROP OWNED BY regress_upsert_writer;
DROP ROLE regress_upsert_writer;

-- Clean up: each file leaves the database as it found it.
SET client_min_messages = warning;
DROP SCHEMA upserts, "Billing", hostile, nested_a CASCADE;
RESET client_min_messages;
