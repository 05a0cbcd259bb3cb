# ALTER EXTENSION inbox UPDATE from 1.1 (through 1.2, which drops the consumer id sequence, to
# the default version) keeps what a database used as 1.1 holds: every marker stays a duplicate,
# the consumers keep their ids and settings (gap in the ids included), stored results and
# payload fingerprints answer as before, failed attempts still count, the grants made with inbox.grant_access still work, a new
# consumer registers above the highest id, and a dump of the updated database restores with all
# of it. (1.0 in one update: 015_update_from_1_0.pl; 1.2: 027_update_from_1_2.pl.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('update_1_1', "inbox.purge_worker = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE shop');

# 1.1, used as 1.1 was: claims of several consumers with ids of every stored form (canonical
# UUID, upper-case UUID, 16-byte ids, others), consumers' own settings, a stored result, a
# payload's fingerprint, a forgotten marker, grants to an application, an operator and a
# monitoring role.
$node->safe_psql('shop', q{
	CREATE EXTENSION inbox VERSION '1.1';
	CREATE ROLE app LOGIN;
	CREATE ROLE monitor LOGIN;
	CREATE ROLE ops LOGIN;
	SELECT inbox.grant_access('app', 'consume'), inbox.grant_access('monitor', 'monitor'),
	       inbox.grant_access('ops', 'operate');
} . message_ids_sql(200) . q{
	SELECT count(inbox.claim(c, i.message_id)) FROM ids i, (VALUES ('billing'), ('shipping'), ('Billing')) v(c);
	SELECT inbox.configure_consumer('billing', retention => '3 days', max_attempts => 3);
	SELECT inbox.configure_consumer('shipping', retention => '2 hours 30 minutes');
	SELECT inbox.forget('billing', 'msg-1');
	BEGIN;
	SELECT outcome FROM inbox.receive('checkout', 'req-1', '{"sku": "A-1", "qty": 2}');
	SELECT inbox.complete('checkout', 'req-1', '{"status": 201, "order": 7731}');
	COMMIT;
	SELECT outcome FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 1}');
});

# 1.1 took ids from a sequence, and a first claim that rolled back burnt one: the ids have a gap.
# (The library of 1.2, which serves this database, registers without the sequence: the gap is
# made as 1.1's registration made it, with the sequence's default.)
$node->safe_psql('shop', q{
	SELECT setval('inbox.consumer_registry_id_seq', max(id)) FROM inbox.consumer_registry;
	SELECT nextval('inbox.consumer_registry_id_seq');
	INSERT INTO inbox.consumer_registry (name) VALUES ('audit');
	SELECT count(inbox.claim('audit', message_id)) FROM ids;
});
is( $node->safe_psql('shop', q{SELECT max(id) - count(*) FROM inbox.consumer_registry}),
	'1', 'at 1.1 the consumer ids have a gap');

# Three failed deliveries of one message: billing's limit.
$node->safe_psql('shop', q{BEGIN; SELECT inbox.claim('billing', 'poison-1'); ROLLBACK;})
  for 1 .. 3;
is( $node->safe_psql('shop', q{SELECT failures FROM inbox.attempts WHERE message_id = 'poison-1'},
		extra_params => [ '-U', 'monitor' ]),
	'3', 'at 1.1 the monitoring role reads the failed attempts');

$node->safe_psql('shop', q{
	CREATE TABLE markers_before AS
		SELECT consumer, message_id, processed_at FROM inbox.messages;
	CREATE TABLE registry_before AS
		SELECT id, name, retention, max_attempts, registered_at FROM inbox.consumer_registry;
	CREATE TABLE consumers_before AS SELECT * FROM inbox.consumers;
});

$node->safe_psql('shop', 'ALTER EXTENSION inbox UPDATE');

# A dump of the updated database, taken before the checks below add to it, is restored and
# checked as the updated database is.
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/updated_1_1.dump";
$node->command_ok(['pg_dump', '--format=custom', '--file', $dump, '--dbname', $node->connstr('shop')],
	'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'), $dump],
	'pg_restore of it');

is($node->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	'1.3', 'the extension is at the default version, 1.3');
is( $node->safe_psql('shop', q{
		SELECT to_regclass('inbox.consumer_registry_id_seq') IS NULL
		   AND NOT EXISTS (SELECT FROM pg_extension e, unnest(e.extconfig) c
		                   WHERE e.extname = 'inbox' AND c = 0)
		   AND (SELECT string_agg(c::regclass::text, ' ' ORDER BY c::regclass::text)
		        FROM pg_extension e, unnest(e.extconfig) c WHERE e.extname = 'inbox')
		       = 'inbox.consumer_registry inbox.marker_details inbox.markers inbox.outbox_delivered inbox.outbox_messages inbox.outbox_ordinal inbox.stream_positions'}),
	't', 'the sequence is gone, and so is its entry among the tables pg_dump dumps');

# What a database must still answer after the update, and after its restore. $label says which.
sub check_kept
{
	my ($db, $label) = @_;
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM markers_before b FULL JOIN inbox.messages m
			    USING (consumer, message_id, processed_at)
			WHERE b.consumer IS NULL OR m.consumer IS NULL}),
		'0', "$label: every marker is there, ids and times as they were");
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM (
			    (TABLE registry_before
			     EXCEPT ALL SELECT id, name, retention, max_attempts, registered_at
			                FROM inbox.consumer_registry WHERE name <> 'newcomer')
			    UNION ALL
			    (SELECT id, name, retention, max_attempts, registered_at
			     FROM inbox.consumer_registry WHERE name <> 'newcomer'
			     EXCEPT ALL TABLE registry_before)) d}),
		'0', "$label: every consumer keeps its id and its settings");
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM (
			    (TABLE consumers_before
			     EXCEPT ALL SELECT consumer, retention, max_attempts, registered_at
			                FROM inbox.consumers WHERE consumer <> 'newcomer')
			    UNION ALL
			    (SELECT consumer, retention, max_attempts, registered_at
			     FROM inbox.consumers WHERE consumer <> 'newcomer'
			     EXCEPT ALL TABLE consumers_before)) d}),
		'0', "$label: inbox.consumers is unchanged");
	is($node->safe_psql($db, q{SELECT count(*) FROM inbox.consumers WHERE owner IS NOT NULL}),
		'0', "$label: every consumer is open, as at 1.1");
	is( $node->safe_psql($db, q{SELECT inbox.claim('shipping', 'after-update-1')},
			extra_params => [ '-U', 'app' ]),
		't', "$label: the application role claims for a consumer of 1.1");
	is( $node->safe_psql($db, q{
			SELECT inbox.configure_consumer('shipping', retention => '2 hours 30 minutes')},
			extra_params => [ '-U', 'ops' ]),
		'', "$label: the operator configures a consumer with the configure_consumer of 1.2");
	is( $node->safe_psql($db, q{
			SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) FROM markers_before}),
		'0', "$label: every message processed before is a duplicate");
	is( $node->safe_psql($db, q{
			SELECT outcome || ' ' || result
			FROM inbox.receive('checkout', 'req-1', '{"qty": 2, "sku": "A-1"}')}),
		'duplicate {"order": 7731, "status": 201}', "$label: a duplicate comes with its stored result");
	is( $node->safe_psql($db, q{
			SELECT outcome FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 9}')}),
		'payload_mismatch', "$label: another payload under a known id is a mismatch");
	is($node->safe_psql($db, q{SELECT inbox.claim('billing', 'msg-1')}),
		't', "$label: the forgotten message is new");
	is( $node->safe_psql($db, q{SELECT inbox.claim('newcomer', 'n-1')}, extra_params => [ '-U', 'app' ]),
		't', "$label: the application role registers a new consumer");
	is( $node->safe_psql($db, q{
			SELECT r.id - (SELECT max(id) FROM registry_before)
			FROM inbox.consumer_registry r WHERE r.name = 'newcomer'}),
		'1', "$label: the new consumer takes the id above the highest");
	return;
}

check_kept('shop', 'updated');
is( $node->safe_psql('shop', q{
		SELECT outcome || ' ' || attempts FROM inbox.receive('billing', 'poison-1')}),
	'poisoned 3', 'the failed attempts of 1.1 count against max_attempts after the update');
is( $node->safe_psql('shop', q{
		SELECT (SELECT failures FROM inbox.attempts WHERE consumer = 'billing' AND message_id = 'poison-1')
		       || ' ' || (SELECT retained FROM inbox.stats WHERE consumer = 'audit')},
		extra_params => [ '-U', 'monitor' ]),
	'3 411', 'the monitoring role reads inbox.attempts and inbox.stats');
$node->safe_psql('shop', q{BEGIN; SELECT inbox.claim('ghost', 'g-1'); ROLLBACK;});
$node->safe_psql('shop', q{SELECT inbox.claim('second-newcomer', 'n-1')});
is( $node->safe_psql('shop', q{
		SELECT (SELECT id FROM inbox.consumer_registry WHERE name = 'second-newcomer')
		       - (SELECT id FROM inbox.consumer_registry WHERE name = 'newcomer')}),
	'1', 'a first claim that rolled back costs no id any more');

check_kept('restored', 'restored');
is( $node->safe_psql('restored', q{
		SELECT has_function_privilege('app', 'inbox.receive(text, text, jsonb, boolean)', 'EXECUTE'),
		       has_table_privilege('monitor', 'inbox.attempts', 'SELECT'),
		       has_function_privilege('monitor', 'inbox.failed_attempts()', 'EXECUTE')}),
	't|t|t', 'restored: the grants too');
is( $node->safe_psql('shop', q{
		SELECT string_agg(has_table_privilege('monitor', v, 'SELECT')::text, ' ' ORDER BY v)
		FROM unnest(ARRAY['inbox.outbox', 'inbox.outbox_stats', 'inbox.streams']) v}),
	'true true true', 'the monitoring role of 1.1 reads the views of 1.3');
is( $node->safe_psql('shop', q{
		SELECT has_function_privilege('app', 'inbox.message_key(text)', 'EXECUTE')}),
	't', 'the consuming role of 1.1 computes the stored form of a message id, as 1.2 grants it');

$node->stop;
done_testing();
