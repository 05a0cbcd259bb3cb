-- The public contract as the README's SQL reference states it, object by object: the names,
-- signatures and types that users and their tooling depend on.
BEGIN;
SELECT plan(74);

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
SELECT columns_are('inbox', 'consumers',
                   ARRAY['consumer', 'retention', 'max_attempts', 'registered_at', 'owner']);
SELECT col_type_is('inbox', 'consumers', 'retention', 'interval', 'retention is an interval');
SELECT col_type_is('inbox', 'consumers', 'max_attempts', 'integer', 'max_attempts is an integer');
SELECT col_type_is('inbox', 'consumers', 'owner', 'name', 'owner is a role''s name');
SELECT function_returns('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer', 'regrole'],
                        'void');
SELECT hasnt_function('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer'],
                      'one configure_consumer: 1.1''s is replaced');
SELECT isnt_definer('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer', 'regrole']);
SELECT function_privs_are('inbox', 'configure_consumer', ARRAY['text', 'interval', 'integer', 'regrole'],
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
SELECT lives_ok($$SELECT inbox.configure_consumer('pgtap', owner => current_user::text::regrole)$$,
                'configure_consumer with an owner');
SELECT is((SELECT owner::text FROM inbox.consumers WHERE consumer = 'pgtap'), current_user::text,
          'inbox.consumers shows the owner');

-- Who registers a consumer (a superuser's setting).
SELECT is(current_setting('inbox.consumer_registration'), 'auto', 'registration by claim is the default');
SET LOCAL inbox.consumer_registration = configured;
SELECT throws_ok($$SELECT inbox.claim('pgtap-unknown', 'x')$$, '42704',
                 'consumer "pgtap-unknown" is not configured', 'configured: an unknown consumer is refused');
RESET inbox.consumer_registration;

-- Outcomes beyond true/false (docs/outcomes.md).
SELECT has_enum('inbox', 'outcome', 'the outcome of a delivery');
SELECT enum_has_labels('inbox', 'outcome',
                       ARRAY['processed', 'duplicate', 'in_progress', 'payload_mismatch', 'poisoned', 'failed'],
                       'its labels, in order');
SELECT has_composite('inbox', 'receipt', 'what receive returns');
SELECT columns_are('inbox', 'receipt', ARRAY['outcome', 'result', 'attempts']);
SELECT col_type_is('inbox', 'receipt', 'outcome', 'inbox', 'outcome', 'the receipt''s outcome');
SELECT col_type_is('inbox', 'receipt', 'result', 'jsonb', 'the receipt''s stored result');
SELECT col_type_is('inbox', 'receipt', 'attempts', 'integer', 'the receipt''s earlier failures');
SELECT function_returns('inbox', 'receive', ARRAY['text', 'text', 'jsonb', 'boolean'], 'inbox.receipt');
SELECT function_returns('inbox', 'complete', ARRAY['text', 'text', 'jsonb'], 'void');
SELECT function_returns('inbox', 'claim_batch', ARRAY['text', 'text[]'], 'setof text');
SELECT function_returns('inbox', 'apply_batch', ARRAY['text', 'regprocedure', 'jsonb'], 'setof record');
SELECT is((SELECT pg_catalog.pg_get_function_result('inbox.apply_batch(text, regprocedure, jsonb)'::regprocedure)),
          'TABLE(message_id text, outcome inbox.outcome, sqlstate text, message text)',
          'apply_batch returns (message_id, outcome, sqlstate, message)');
SELECT has_view('inbox', 'attempts', 'the failed attempts');
SELECT columns_are('inbox', 'attempts', ARRAY['consumer', 'message_id', 'failures', 'last_sqlstate',
                                              'last_message', 'last_failed_at']);
SELECT col_type_is('inbox', 'attempts', 'failures', 'integer', 'failures is an integer');
SELECT col_type_is('inbox', 'attempts', 'last_failed_at', 'timestamp with time zone',
                   'last_failed_at is timestamptz');
SELECT has_column('inbox', 'stats', 'in_progress', 'stats counts in_progress answers');
SELECT has_column('inbox', 'stats', 'payload_mismatches', 'stats counts payload mismatches');
SELECT has_column('inbox', 'stats', 'poisoned', 'stats counts poisoned answers');
SELECT col_type_is('inbox', 'stats', 'attempts_evicted', 'bigint',
                   'stats counts the failed attempts forgotten to make room');
SELECT isnt_strict('inbox', 'receive', ARRAY['text', 'text', 'jsonb', 'boolean']);
SELECT isnt_strict('inbox', 'complete', ARRAY['text', 'text', 'jsonb']);
SELECT isnt_strict('inbox', 'claim_batch', ARRAY['text', 'text[]']);
SELECT isnt_strict('inbox', 'apply_batch', ARRAY['text', 'regprocedure', 'jsonb']);
SELECT isnt_definer('inbox', 'receive', ARRAY['text', 'text', 'jsonb', 'boolean']);
SELECT isnt_definer('inbox', 'apply_batch', ARRAY['text', 'regprocedure', 'jsonb']);
SELECT function_privs_are('inbox', 'receive', ARRAY['text', 'text', 'jsonb', 'boolean'], 'public',
                          ARRAY[]::text[], 'receive is not granted to PUBLIC');
SELECT function_privs_are('inbox', 'complete', ARRAY['text', 'text', 'jsonb'], 'public',
                          ARRAY[]::text[], 'complete is not granted to PUBLIC');
SELECT function_privs_are('inbox', 'claim_batch', ARRAY['text', 'text[]'], 'public',
                          ARRAY[]::text[], 'claim_batch is not granted to PUBLIC');
SELECT function_privs_are('inbox', 'apply_batch', ARRAY['text', 'regprocedure', 'jsonb'], 'public',
                          ARRAY[]::text[], 'apply_batch is not granted to PUBLIC');
SELECT table_privs_are('inbox', 'attempts', 'public', ARRAY[]::text[],
                       'attempts is not readable by PUBLIC');

-- receive's payload defaults to NULL and wait to true; complete's result is every later answer.
SELECT is((inbox.receive('pgtap', 'r-1')).outcome, 'processed', 'receive with two arguments');
SELECT lives_ok($$SELECT inbox.complete('pgtap', 'r-1', '{"status": 201}')$$, 'complete');
SELECT is(inbox.receive('pgtap', 'r-1'), ROW('duplicate', '{"status": 201}', 0)::inbox.receipt,
          'a duplicate carries the stored result');
SELECT results_eq($$SELECT * FROM inbox.claim_batch('pgtap', ARRAY['b-2', 'b-1', 'b-2'])$$,
                  ARRAY['b-2', 'b-1'], 'claim_batch: the ids claimed now, each once, in input order');
SELECT throws_ok($$SELECT inbox.receive('pgtap', NULL)$$, '22004', 'message_id must not be NULL');
SELECT throws_ok($$SELECT inbox.complete('pgtap', 'never', '{}')$$, '55000');
-- max_attempts reached: apply raises IB001 without running the handler.
SELECT lives_ok($$SELECT inbox.configure_consumer('pgtap-poison', NULL, 1)$$, 'a limit of one failure');
CREATE FUNCTION pgtap_fail() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE 'handler failed'; END $$;
SELECT throws_ok($$SELECT inbox.apply('pgtap-poison', 'x-1', 'pgtap_fail()')$$, 'P0001',
                 'handler failed', 'a failed delivery (rolled back to throws_ok''s savepoint)');
SELECT throws_ok($$SELECT inbox.apply('pgtap-poison', 'x-1', 'pgtap_noop()')$$, 'IB001');
SELECT is((inbox.receive('pgtap-poison', 'x-1')).outcome, 'poisoned', 'receive answers poisoned');

SELECT * FROM finish();
ROLLBACK;
