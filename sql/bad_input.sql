-- Every bad input gets a clear error with a fitting SQLSTATE and writes nothing.
CREATE FUNCTION outcome(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
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
