-- Every bad input gets a clear error with a fitting SQLSTATE and writes nothing.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
CREATE FUNCTION handled(jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
SELECT count(*) AS markers_before FROM inbox.messages \gset

SELECT statement, outcome(statement) FROM (VALUES
    ($$SELECT inbox.claim(NULL, 'm')$$),
    ($$SELECT inbox.claim('c', NULL)$$),
    ($$SELECT inbox.claim('', 'm')$$),
    ($$SELECT inbox.claim('c', '')$$),
    ($$SELECT inbox.claim(repeat('c', 65), 'm')$$),
    ($$SELECT inbox.claim('c', repeat('m', 129))$$),
    ($$SELECT inbox.claim(repeat(U&'\00E9', 33), 'm')$$),
    ($$SELECT inbox.forget(NULL, 'm')$$),
    ($$SELECT inbox.forget('c', '')$$),
    ($$SELECT inbox.forget('c', repeat('m', 129))$$),
    ($$SELECT inbox.apply(NULL, 'm', 'handled(jsonb)')$$),
    ($$SELECT inbox.apply('c', NULL, 'handled(jsonb)')$$),
    ($$SELECT inbox.apply('c', '', 'handled(jsonb)')$$),
    ($$SELECT inbox.apply('c', 'm', NULL)$$),
    ($$SELECT inbox.apply('c', 'm', 'no_such_handler(jsonb)')$$),
    ($$SELECT inbox.apply('c', 'm', 4294967295::oid::regprocedure)$$),
    ($$SELECT inbox.apply('c', 'm', 0)$$),
    ($$SELECT inbox.apply('c', 'm', '-'::regprocedure)$$),
    ($$SELECT inbox.apply('c', 'm', 'plpgsql_call_handler()')$$),
    ($$SELECT inbox.apply('c', 'm', 'suppress_redundant_updates_trigger()')$$),
    ($$SELECT inbox.apply('c', 'm', 'upper(text)')$$),
    ($$SELECT inbox.apply('c', 'm', 'jsonb_set(jsonb,text[],jsonb,boolean)')$$),
    ($$SELECT inbox.apply('c', 'm', 'jsonb_each(jsonb)')$$),
    ($$SELECT inbox.apply('c', 'm', 'jsonb_agg(anyelement)')$$)
) AS bad(statement);

SELECT count(*) - :markers_before AS markers_written FROM inbox.messages;

-- A procedure is not a handler either.
CREATE PROCEDURE handler_procedure(jsonb) LANGUAGE sql AS 'SELECT';
SELECT outcome($$SELECT inbox.apply('c', 'm', 'handler_procedure(jsonb)')$$);
SELECT count(*) - :markers_before AS markers_written FROM inbox.messages;

-- The handler cached for a call site is re-resolved when the function changes between two calls
-- of one statement, and, in apply_batch, between two messages of one call: dropped (42883), its
-- EXECUTE revoked or called by another user (42501). Nothing is written.
CREATE FUNCTION victim(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF (payload ->> 'drop')::boolean THEN DROP FUNCTION victim(jsonb); END IF;
END $$;
SELECT call, split_part(outcome(statement), ':', 1) AS sqlstate FROM (VALUES
    ('apply, second row', $$SELECT inbox.apply('site', 'v-' || i, 'victim(jsonb)',
                                                 jsonb_build_object('drop', i = 1))
                            FROM generate_series(1, 2) i$$),
    ('apply_batch, second call', $$SELECT b.* FROM generate_series(1, 2) i,
        LATERAL inbox.apply_batch('site', 'victim(jsonb)', jsonb_build_array(jsonb_build_object(
            'id', 'vb-' || i, 'payload', jsonb_build_object('drop', i = 1)))) b$$),
    ('apply_batch, second message', $$SELECT * FROM inbox.apply_batch('site', 'victim(jsonb)',
        '[{"id": "vm-1", "payload": {"drop": true}}, {"id": "vm-2", "payload": {"drop": false}}]')$$)
) AS c(call, statement);
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'site';

CREATE ROLE regress_apply_caller;
GRANT USAGE ON SCHEMA inbox TO regress_apply_caller;
GRANT EXECUTE ON FUNCTION inbox.apply(text, text, regprocedure, jsonb),
    inbox.apply_batch(text, regprocedure, jsonb), outcome(text) TO regress_apply_caller;
CREATE FUNCTION revoked_after_one(payload jsonb) RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    REVOKE EXECUTE ON FUNCTION revoked_after_one(jsonb) FROM regress_apply_caller;
END $$;
REVOKE EXECUTE ON FUNCTION revoked_after_one(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION revoked_after_one(jsonb) TO regress_apply_caller;
SET ROLE regress_apply_caller;
SELECT outcome($$SELECT inbox.apply('site', 'r-' || i, 'revoked_after_one(jsonb)', '{}')
                 FROM generate_series(1, 2) i$$);
SELECT outcome($$SELECT * FROM inbox.apply_batch('site', 'revoked_after_one(jsonb)',
                                                 '[{"id": "rb-1"}, {"id": "rb-2"}]')$$);
RESET ROLE;
-- A handler that switches to a role which may not call it.
CREATE FUNCTION become_apply_caller(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    SET ROLE regress_apply_caller;
END $$;
REVOKE EXECUTE ON FUNCTION become_apply_caller(jsonb) FROM PUBLIC;
SELECT outcome($$SELECT inbox.apply('site', 'u-' || i, 'become_apply_caller(jsonb)', '{}')
                 FROM generate_series(1, 2) i$$);
SELECT outcome($$SELECT * FROM inbox.apply_batch('site', 'become_apply_caller(jsonb)',
                                                 '[{"id": "ub-1"}, {"id": "ub-2"}]')$$);
SELECT current_user = session_user AS role_restored;
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'site';
DROP FUNCTION revoked_after_one(jsonb), become_apply_caller(jsonb);
DROP OWNED BY regress_apply_caller;
DROP ROLE regress_apply_caller;

-- Clean up: each file leaves the database as it found it.
DROP FUNCTION handled(jsonb), victim(jsonb);
DROP PROCEDURE handler_procedure(jsonb);
DELETE FROM inbox.messages;
