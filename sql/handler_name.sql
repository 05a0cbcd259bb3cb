-- fn is a regprocedure: the handler's name with its argument types, 'credit(jsonb)'. Written
-- without them, 'credit' is refused by PostgreSQL's own regprocedure input, before inbox runs:
-- 22P02, "expected a left parenthesis", the position pointing at the argument. Nothing is
-- written. The README's errors table says so; this file keeps it true.
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT inbox.apply('handler-name', 'm-1', 'credit', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inbox.apply_batch('handler-name', 'credit', '[{"id": "m-1"}]');
\echo :LAST_ERROR_SQLSTATE
PREPARE deliver(text, text, regprocedure, jsonb) AS SELECT inbox.apply($1, $2, $3, $4);
EXECUTE deliver('handler-name', 'm-1', 'credit', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'handler-name';
SELECT inbox.apply('handler-name', 'm-1', 'credit(jsonb)', '{}') AS with_its_argument_types;

DEALLOCATE deliver;
DROP FUNCTION credit(jsonb);
DELETE FROM inbox.messages WHERE consumer = 'handler-name';
