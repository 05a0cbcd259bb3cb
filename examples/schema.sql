-- What the example consumers need in their database:
--   psql -d yourdb -v consumer_role=app -f examples/schema.sql
-- for consumers that connect as the role app (without -v, as the role running this script).

CREATE EXTENSION IF NOT EXISTS inbox;

CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL);

-- The handler: the work of one payment message, run by inbox.apply_batch in the consumer's
-- transaction. An amount that is not a number raises (22P02), and inbox counts a failed attempt.
CREATE FUNCTION apply_payment(payment jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO accounts (id, balance)
    VALUES (payment ->> 'account', (payment ->> 'amount')::numeric)
    ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance
$$;

-- The consumers' role: the extension's functions for consumers, and the handler's table.
\if :{?consumer_role}
SELECT inbox.grant_access(:'consumer_role', 'consume');
GRANT SELECT, INSERT, UPDATE ON accounts TO :"consumer_role";
\else
\set consumer_role :USER
\endif

-- The consumer payments belongs to that role: no other may claim, skip or poison its messages.
-- After 3 failed deliveries a message is poisoned: the consumers send it to the dead-letter
-- queue instead of failing on it for ever.
SELECT inbox.configure_consumer('payments', max_attempts => 3, owner => :'consumer_role');
