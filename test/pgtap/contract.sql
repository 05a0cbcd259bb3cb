-- The public contract as the README's SQL reference states it, object by object: the names,
-- signatures and types that users and their tooling depend on.
BEGIN;
SELECT plan(109);

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

-- 1.3: the outbox (docs/outbox.md).
SELECT function_returns('inbox', 'send', ARRAY['text', 'jsonb', 'text', 'jsonb'], 'uuid');
SELECT function_returns('inbox', 'send_bytes', ARRAY['text', 'bytea', 'text', 'jsonb'], 'uuid');
SELECT is((SELECT pg_catalog.pg_get_function_arguments('inbox.send(text, jsonb, text, jsonb)'::regprocedure)),
          'destination text, payload jsonb, key text DEFAULT NULL::text, headers jsonb DEFAULT NULL::jsonb',
          'send(destination, payload, key, headers), key and headers optional');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
               'inbox.relay_take(text, integer, interval, text[])'::regprocedure)),
          'relay text, max_messages integer DEFAULT 100, lease interval DEFAULT ''00:00:30''::interval, '
          'destinations text[] DEFAULT NULL::text[]',
          'relay_take(relay, max_messages 100, lease 30 s, destinations)');
SELECT is((SELECT pg_catalog.pg_get_function_result(
               'inbox.relay_take(text, integer, interval, text[])'::regprocedure)),
          'TABLE(id uuid, destination text, key text, headers jsonb, payload jsonb, attempt integer, '
          'payload_bytes bytea)',
          'relay_take returns (id, destination, key, headers, payload, attempt, payload_bytes)');
SELECT function_returns('inbox', 'relay_done', ARRAY['uuid[]'], 'integer');
SELECT function_returns('inbox', 'relay_failed', ARRAY['uuid[]', 'text', 'interval'], 'integer');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
               'inbox.relay_failed(uuid[], text, interval)'::regprocedure)),
          'ids uuid[], error text, retry_after interval DEFAULT ''00:00:10''::interval',
          'relay_failed retries after 10 s by default');
SELECT function_returns('inbox', 'relay_release', ARRAY['uuid[]'], 'integer');
SELECT has_view('inbox', 'outbox', 'every outgoing message');
SELECT columns_are('inbox', 'outbox',
                   ARRAY['id', 'destination', 'key', 'state', 'attempts', 'last_error', 'created_at',
                         'delivered_at', 'cause_consumer', 'cause_message_id', 'leased_by',
                         'not_before', 'dead_at']);
SELECT has_view('inbox', 'outbox_stats', 'the relays'' lag');
SELECT col_type_is('inbox', 'stats', 'outbox_pending', 'bigint', 'stats shows the pending messages');
SELECT col_type_is('inbox', 'stats', 'outbox_oldest_pending_age', 'interval',
                   'stats shows the oldest pending message''s age');
SELECT function_privs_are('inbox', 'send', ARRAY['text', 'jsonb', 'text', 'jsonb'], 'public',
                          ARRAY[]::text[], 'send is not granted to PUBLIC');
SELECT function_privs_are('inbox', 'relay_take', ARRAY['text', 'integer', 'interval', 'text[]'],
                          'public', ARRAY[]::text[], 'relay_take is not granted to PUBLIC');
SELECT table_privs_are('inbox', 'outbox', 'public', ARRAY[]::text[],
                       'outbox is not readable by PUBLIC');
CREATE ROLE pgtap_relay;
SELECT lives_ok($$SELECT inbox.grant_access('pgtap_relay', 'relay')$$, 'relay access');
SELECT function_privs_are('inbox', 'relay_done', ARRAY['uuid[]'], 'pgtap_relay',
                          ARRAY['EXECUTE'], 'relay may mark done');
SELECT function_privs_are('inbox', 'send', ARRAY['text', 'jsonb', 'text', 'jsonb'], 'pgtap_relay',
                          ARRAY[]::text[], 'relay may not send');
SELECT is((SELECT count(*) FROM inbox.relay_take('pgtap', 10)), 0::bigint,
          'nothing to take before a send commits');

-- 1.3: streams (docs/streams.md).
SELECT function_returns('inbox', 'claim_position', ARRAY['text', 'text', 'bigint', 'boolean'], 'text');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(
               'inbox.claim_position(text, text, bigint, boolean)'::regprocedure)),
          'consumer text, stream text, "position" bigint, contiguous boolean DEFAULT false',
          'claim_position(consumer, stream, position, contiguous false)');
SELECT function_returns('inbox', 'claim_positions', ARRAY['text', 'text', 'bigint[]', 'boolean'],
                        'bigint[]');
SELECT function_returns('inbox', 'stream_position', ARRAY['text', 'text'], 'bigint');
SELECT function_returns('inbox', 'retire_stream', ARRAY['text', 'text'], 'boolean');
SELECT has_view('inbox', 'streams', 'one position per stream');
SELECT columns_are('inbox', 'streams', ARRAY['consumer', 'stream', 'position', 'updated_at']);
SELECT function_privs_are('inbox', 'claim_position', ARRAY['text', 'text', 'bigint', 'boolean'],
                          'public', ARRAY[]::text[], 'claim_position is not granted to PUBLIC');
SELECT is(inbox.claim_position('pgtap', 'orders/0', 41), 'next', 'a first position is next');
SELECT is(inbox.claim_position('pgtap', 'orders/0', 41), 'duplicate',
          'the same position again is a duplicate');
SELECT is(inbox.claim_position('pgtap', 'orders/0', 42), 'next', 'the one after it is next');
SELECT is(inbox.claim_position('pgtap', 'events/7', 3, true), 'gap',
          'contiguous: 3 of a stream never claimed is a gap');
SELECT is(inbox.claim_positions('pgtap', 'orders/1', ARRAY[5, 6, 7]::bigint[]), ARRAY[5, 6, 7]::bigint[],
          'the batch form: the new positions');
SELECT is(inbox.stream_position('pgtap', 'orders/9'), NULL, 'an unknown stream has no position');

SELECT * FROM finish();
ROLLBACK;
