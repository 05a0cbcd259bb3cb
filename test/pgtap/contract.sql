-- The public contract as the README's SQL reference states it, object by object: the names,
-- signatures and types that users and their tooling depend on.
BEGIN;
SELECT plan(27);

SELECT has_schema('inbox');
SELECT has_view('inbox', 'messages', 'the markers, as a view over the compact store');
SELECT columns_are('inbox', 'messages', ARRAY['consumer', 'message_id', 'processed_at']);
SELECT col_type_is('inbox', 'messages', 'consumer', 'text', 'consumer is text');
SELECT col_type_is('inbox', 'messages', 'message_id', 'text', 'message_id is text');
SELECT col_type_is('inbox', 'messages', 'processed_at', 'timestamp with time zone',
                   'processed_at is timestamptz');
SELECT col_is_pk('inbox', 'markers', ARRAY['consumer_id', 'message_key']::name[],
                 'one marker per (consumer, message_id), arbitrated by the store''s primary key');
SELECT has_view('inbox', 'consumers', 'the consumers');
SELECT columns_are('inbox', 'consumers', ARRAY['consumer', 'retention', 'max_attempts', 'registered_at']);
SELECT col_type_is('inbox', 'consumers', 'retention', 'interval', 'retention is an interval');
SELECT col_type_is('inbox', 'consumers', 'max_attempts', 'integer', 'max_attempts is an integer');
SELECT function_returns('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer'], 'void');
SELECT isnt_definer('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer']);
SELECT function_privs_are('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer'],
                          'public', ARRAY[]::text[], 'configure_consumer is not granted to PUBLIC');
SELECT has_view('inbox', 'stats', 'the statistics');

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
SELECT lives_ok($$SELECT inbox.configure_consumer('pgtap', '7 days', 3)$$, 'configure_consumer');

SELECT * FROM finish();
ROLLBACK;
