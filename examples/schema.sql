-- What the example consumers need, in a database of their own (examples/README.md says how to
-- run it and each example):
--   sudo -u postgres psql -X -q -v ON_ERROR_STOP=1 -d inbox_examples < examples/schema.sql
-- Everything it creates has a name of its own, so it cannot meet the README's objects: the
-- schema examples (the table accounts and the handler apply_payment), the consumer
-- examples.payments and the login role inbox_example.

-- Stop at the first error, however psql was called.
\set ON_ERROR_STOP on

-- max_attempts (the malformed payment is dead-lettered after 3 failed deliveries) counts the
-- failed attempts in shared memory: without the preload no message is ever poisoned, and the
-- consumers would redeliver the malformed one for ever.
DO $$
BEGIN
    IF NOT 'inbox' = ANY (string_to_array(replace(replace(
            current_setting('shared_preload_libraries'), ' ', ''), '"', ''), ',')) THEN
        RAISE EXCEPTION 'the examples need inbox preloaded'
            USING HINT = 'Add shared_preload_libraries = ''inbox'' to postgresql.conf and '
                         'restart (examples/README.md, "Set-up").';
    END IF;
END $$;

CREATE EXTENSION IF NOT EXISTS inbox;

-- The role the consumers connect as: a password, so that it can connect over TCP to localhost
-- (Debian's pg_hba.conf: scram-sha-256) from any operating-system user. It is given what a
-- consumer needs and nothing more. An example's password: use your own role in earnest.
SELECT NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'inbox_example') AS create_role \gset
\if :create_role
CREATE ROLE inbox_example LOGIN PASSWORD 'inbox_example';
\endif

CREATE SCHEMA examples;
CREATE TABLE examples.accounts (id text PRIMARY KEY, balance numeric NOT NULL);

-- The handler: the work of one payment message, run by inbox.apply_batch (or inbox.apply) in the
-- consumer's transaction. An amount that is not a number raises (22P02), and inbox counts a
-- failed attempt.
CREATE FUNCTION examples.apply_payment(payment jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO examples.accounts (id, balance)
    VALUES (payment ->> 'account', (payment ->> 'amount')::numeric)
    ON CONFLICT (id) DO UPDATE SET balance = examples.accounts.balance + EXCLUDED.balance
$$;

-- The consumers' role: the extension's functions for consumers, and the handler's table.
GRANT USAGE ON SCHEMA examples TO inbox_example;
GRANT SELECT, INSERT, UPDATE ON examples.accounts TO inbox_example;
DO $$
BEGIN
    PERFORM inbox.grant_access('inbox_example', 'consume');
    -- The consumer examples.payments belongs to that role: no other may claim, skip or poison
    -- its messages. After 3 failed deliveries a message is poisoned: the consumers send it to
    -- the dead-letter queue instead of failing on it for ever.
    PERFORM inbox.configure_consumer('examples.payments', max_attempts => 3, owner => 'inbox_example');
END $$;
