-- fn is a regprocedure: the handler's name with its argument types, 'credit(jsonb)'. An untyped
-- literal goes to the overloads that take it as text (inbox.handler_named), which answer a name
-- written without its argument types with 22P02 and the signature to write; a value typed
-- regprocedure gets PostgreSQL's own input error, the same SQLSTATE. Nothing is written either
-- way, and the overloads need what the functions they call need: EXECUTE on those.
CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT inbox.apply('handler-name', 'm-1', 'credit', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inbox.apply_batch('handler-name', 'credit', '[{"id": "m-1"}]');
\echo :LAST_ERROR_SQLSTATE
-- Two functions of the name: the hint cannot name one.
CREATE FUNCTION credit() RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT inbox.apply('handler-name', 'm-1', 'credit', '{}');
DROP FUNCTION credit();
-- None: the same hint; and a name that does not exist with its types is 42883, as before.
SELECT inbox.apply('handler-name', 'm-1', 'no_such_handler', '{}');
SELECT inbox.apply('handler-name', 'm-1', 'no_such_handler(jsonb)', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT inbox.apply('handler-name', 'm-1', NULL, '{}');
\echo :LAST_ERROR_SQLSTATE
PREPARE deliver(text, text, regprocedure, jsonb) AS SELECT inbox.apply($1, $2, $3, $4);
EXECUTE deliver('handler-name', 'm-1', 'credit', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS markers FROM inbox.messages WHERE consumer = 'handler-name';

-- Written in full, as text or as regprocedure, it is the same call.
SELECT inbox.apply('handler-name', 'm-1', 'credit(jsonb)', '{}') AS as_text,
       inbox.apply('handler-name', 'm-2', 'credit(jsonb)'::regprocedure, '{}') AS as_regprocedure,
       inbox.apply('handler-name', 'm-1', 'public.credit(jsonb)', '{}') AS again_qualified;
SELECT message_id, outcome FROM inbox.apply_batch('handler-name', 'credit(jsonb)',
    '[{"id": "m-2", "payload": {}}, {"id": "m-3", "payload": {}}]');
-- One call site reading several texts reads each.
CREATE FUNCTION noted() RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT h, inbox.apply('handler-name', 'v-' || g, h, '{}')
FROM generate_series(1, 4) g, LATERAL (SELECT (ARRAY['credit(jsonb)', 'noted()'])[g % 2 + 1] AS h) x
ORDER BY g;

-- The overloads forward to the functions of 1.0: without EXECUTE on those, a call is refused
-- (42501) as before, whatever the overloads' own grants.
CREATE ROLE regress_handler_name;
GRANT USAGE ON SCHEMA inbox TO regress_handler_name;
SET ROLE regress_handler_name;
SELECT inbox.apply('handler-name', 'm-9', 'credit(jsonb)', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM inbox.apply_batch('handler-name', 'credit(jsonb)', '[{"id": "m-9"}]');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT inbox.grant_access('regress_handler_name', 'consume');
SET ROLE regress_handler_name;
SELECT inbox.apply('handler-name', 'm-9', 'credit(jsonb)', '{}') AS with_consume_access;
RESET ROLE;

DEALLOCATE deliver;
DROP OWNED BY regress_handler_name;
DROP ROLE regress_handler_name;
DROP FUNCTION credit(jsonb), noted();
DELETE FROM inbox.messages WHERE consumer = 'handler-name';
