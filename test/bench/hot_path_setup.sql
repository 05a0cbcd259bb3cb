-- What test/bench/claim_apply_vs_sql.sh and test/bench/hot_path_instructions.sh compare the hot
-- path with: a two-column text table with only its primary key, where hand-written SQL keeps
-- its markers, and the accounts a handler credits, written in PL/pgSQL, in SQL, and in SQL with
-- a standard body (BEGIN ATOMIC: parsed once, when the function is created). (A blank line ends
-- each statement, for a single-user backend's -j mode.)

CREATE EXTENSION inbox;

CREATE TABLE hand_markers (consumer text, message_id text, PRIMARY KEY (consumer, message_id));

CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);

INSERT INTO accounts SELECT g FROM generate_series(1, 1000) g;

CREATE FUNCTION credit_plpgsql(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int;
END $$;

CREATE FUNCTION credit_sql(payload jsonb) RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int
$$;

CREATE FUNCTION credit_sql_atomic(payload jsonb) RETURNS void LANGUAGE sql
BEGIN ATOMIC
    UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
    WHERE id = (payload ->> 'account')::int;
END;
