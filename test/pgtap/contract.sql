-- The public contract as the README's SQL reference states it, object by object: the names,
-- signatures and types that users and their tooling depend on.
BEGIN;
SELECT plan(18);

SELECT has_schema('inbox');
SELECT has_table('inbox', 'messages', 'marker table');
SELECT columns_are('inbox', 'messages', ARRAY['consumer', 'message_id', 'processed_at']);
SELECT col_type_is('inbox', 'messages', 'consumer', 'text', 'consumer is text');
SELECT col_type_is('inbox', 'messages', 'message_id', 'text', 'message_id is text');
SELECT col_type_is('inbox', 'messages', 'processed_at', 'timestamp with time zone',
                   'processed_at is timestamptz');
SELECT col_is_pk('inbox', 'messages', ARRAY['consumer', 'message_id']::name[],
                 'one marker per (consumer, message_id)');

SELECT function_returns('inbox', 'claim', ARRAY['text', 'text'], 'boolean');
SELECT function_returns('inbox', 'apply', ARRAY['text', 'text', 'regprocedure', 'jsonb'], 'boolean');
SELECT function_returns('inbox', 'forget', ARRAY['text', 'text'], 'boolean');
SELECT isnt_strict('inbox', 'claim', ARRAY['text', 'text']);
SELECT isnt_strict('inbox', 'apply', ARRAY['text', 'text', 'regprocedure', 'jsonb']);
SELECT volatility_is('inbox', 'claim', ARRAY['text', 'text'], 'volatile');
SELECT isnt_definer('inbox', 'apply', ARRAY['text', 'text', 'regprocedure', 'jsonb']);

-- apply's payload defaults to NULL: a handler without arguments needs none.
CREATE FUNCTION pgtap_noop() RETURNS void LANGUAGE sql AS 'SELECT';
SELECT is(inbox.apply('pgtap', 'p-1', 'pgtap_noop()'), true, 'apply with three arguments');
SELECT is(inbox.apply('pgtap', 'p-1', 'pgtap_noop()'), false, 'its duplicate');

SELECT throws_ok($$SELECT inbox.claim(NULL, 'x')$$, '22004', 'consumer must not be NULL');
SELECT lives_ok($$SELECT inbox.forget('pgtap', 'p-1')$$, 'forget');

SELECT * FROM finish();
ROLLBACK;
