# ALTER EXTENSION inbox UPDATE from 1.0 to 1.1 keeps every marker: every message that was a
# duplicate before the update is one after it, the ids come back exactly as they were claimed,
# new claims work, the grants of 1.0 still hold, a claim waiting on the update goes on with the
# new store, and a dump of the updated database restores. The library of 1.1 also serves the
# database while it is still at 1.0.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('update', "inbox.purge_worker = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE shop');

# 1.0, used as 1.0 was: claims of several consumers with ids of every kind the stored form
# distinguishes, a forgotten marker, an old one, grants to an application and a monitoring role.
$node->safe_psql('shop', q{
	CREATE EXTENSION inbox VERSION '1.0';
	CREATE TABLE ids (message_id text);
	INSERT INTO ids VALUES ('0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f'), ('0B6C1A2E-7F3A-4C9D-8E21-5A6B7C8D9E0F'),
		('abcdefghijklmnop'), ('abcdefghijklmnopq'), ('orders-2026-000123456'), (repeat('x', 128)),
		(repeat(U&'\00E9', 64)), ('a'), ('with space '), (U&'e\0301');
	INSERT INTO ids SELECT gen_random_uuid()::text FROM generate_series(1, 500);
	INSERT INTO ids SELECT 'msg-' || g FROM generate_series(1, 500) g;
	SELECT count(inbox.claim(c, i.message_id)) FROM ids i, (VALUES ('billing'), ('shipping'), ('Billing')) v(c);
	SELECT inbox.forget('billing', 'msg-1');
	UPDATE inbox.messages SET processed_at = now() - interval '3 hours 0.678 s'
	WHERE consumer = 'shipping' AND message_id = 'msg-2';
	CREATE ROLE app LOGIN;
	CREATE ROLE monitoring LOGIN;
	GRANT USAGE ON SCHEMA inbox TO app, monitoring;
	GRANT EXECUTE ON FUNCTION inbox.claim(text, text), inbox.forget(text, text) TO app;
	GRANT SELECT ON inbox.stats, inbox.messages, inbox.workers TO monitoring;
	GRANT EXECUTE ON FUNCTION inbox.stats_counters(), inbox.worker_status() TO monitoring;
	CREATE TABLE before AS
		SELECT consumer, message_id, date_trunc('second', processed_at) AS processed_at FROM inbox.messages;
});

# Still at 1.0, with the 1.1 library: claim, forget and the purge work on 1.0's table.
is($node->safe_psql('shop', q{SELECT inbox.claim('billing', 'msg-2'), inbox.claim('billing', 'late-1')}),
	'f|t', 'a database still at 1.0 is served by the new library');
$node->safe_psql('shop', q{
	INSERT INTO inbox.messages VALUES ('expiring', 'e-1', now() - interval '2 days');
	INSERT INTO before SELECT 'billing', 'late-1', date_trunc('second', processed_at)
		FROM inbox.messages WHERE message_id = 'late-1';
});
is($node->safe_psql('shop', q{SET inbox.retention = '1d'; CALL inbox.purge()}), '1',
	'and purged');
my $markers = $node->safe_psql('shop', 'SELECT count(*) FROM inbox.messages');
is($markers, $node->safe_psql('shop', 'SELECT count(*) FROM before'), "$markers markers before the update");

# The update, while a claim of a new message and one of a duplicate wait for it.
my $updater = $node->background_psql('shop');
$updater->query_safe('BEGIN');
$updater->query_safe('ALTER EXTENSION inbox UPDATE');
my $new_claim = $node->background_psql('shop', extra_params => ['-U', 'app']);
my $duplicate_claim = $node->background_psql('shop', extra_params => ['-U', 'app']);
$new_claim->query_until(qr/waiting/, q{\echo waiting
	SELECT inbox.claim('billing', 'during-update');
});
$duplicate_claim->query_until(qr/waiting/, q{\echo waiting
	SELECT inbox.claim('billing', 'msg-3');
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE datname = 'shop' AND wait_event_type = 'Lock'"),
	'claims wait for the update');
$updater->query_safe('COMMIT');
$updater->quit;
is($new_claim->query_safe(''), 't', 'the waiting claim of a new message is processed, in the new store');
is($duplicate_claim->query_safe(''), 'f', 'the waiting copy of an old message is a duplicate');
$new_claim->quit;
$duplicate_claim->quit;

is($node->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	$node->safe_psql('shop', "SELECT default_version FROM pg_available_extensions WHERE name = 'inbox'"),
	'the extension is at the default version');
is($node->safe_psql('shop', q{SELECT relkind FROM pg_class WHERE oid = 'inbox.messages'::regclass}),
	'v', 'inbox.messages is a view');
is( $node->safe_psql('shop', q{
		SELECT count(*) FROM before b FULL JOIN inbox.messages m USING (consumer, message_id, processed_at)
		WHERE b.consumer IS NULL OR m.consumer IS NULL}),
	'1', 'every marker is there, ids and times as they were (and the one claimed during the update)');
is( $node->safe_psql('shop', q{
		SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) FROM before}),
	'0', 'every message processed before the update is a duplicate after it');
is($node->safe_psql('shop', q{SELECT inbox.claim('billing', 'msg-1')}), 't',
	'the forgotten one is still new');
is( $node->safe_psql('shop', q{
		SELECT m.processed_at = b.processed_at AND m.processed_at < now() - interval '3 hours'
		FROM inbox.messages m JOIN before b USING (consumer, message_id)
		WHERE consumer = 'shipping' AND message_id = 'msg-2'}),
	't', 'a marker keeps its time, to the second');
is($node->safe_psql('shop', q{SELECT string_agg(consumer, ',' ORDER BY consumer) FROM inbox.consumers}),
	'Billing,billing,shipping', 'one registered consumer per consumer of 1.0');

# The grants of 1.0.
is($node->safe_psql('shop', q{SELECT inbox.claim('billing', 'app-1'), inbox.forget('billing', 'app-1')},
		extra_params => ['-U', 'app']), 't|t', 'the application role claims and forgets');
is( $node->safe_psql('shop',
		q{SELECT count(*) > 0 FROM inbox.stats s JOIN inbox.messages m USING (consumer)},
		extra_params => ['-U', 'monitoring']),
	't', 'the monitoring role reads inbox.stats and inbox.messages');
# inbox.workers reads a function of 1.2, which asks for 1.0's grant on inbox.worker_status().
my $workers_query = 'SELECT count(*) >= 0 FROM (SELECT blocked_since, last_error_at FROM inbox.workers) w';
is($node->safe_psql('shop', $workers_query, extra_params => ['-U', 'monitoring']),
	't', 'and inbox.workers, with the columns of 1.2');
my ($rc, $out, $err) = $node->psql('shop', 'SELECT count(*) FROM inbox.markers',
	extra_params => ['-U', 'app']);
like($err, qr/permission denied/, 'and nobody reads the new tables directly');

# A dump of the updated database restores into a new one with every marker.
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/updated.dump";
$node->command_ok(['pg_dump', '--format=custom', '--file', $dump, '--dbname', $node->connstr('shop')],
	'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE ROLE restorer SUPERUSER; CREATE DATABASE restored');
$node->command_ok(['pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'), $dump],
	'pg_restore');
is( $node->safe_psql('restored', q{
		SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) FROM before}),
	'0', 'after the restore every old message is still a duplicate');
is( $node->safe_psql('restored', q{
		SELECT has_table_privilege('monitoring', 'inbox.messages', 'SELECT'),
		       has_function_privilege('monitoring', 'inbox.stats_counters()', 'EXECUTE'),
		       has_function_privilege('app', 'inbox.claim(text, text)', 'EXECUTE')}),
	't|t|t', 'and the grants of 1.0 that the update carried over are restored too');
is($node->safe_psql('restored', $workers_query, extra_params => ['-U', 'monitoring']),
	't', 'the monitoring role still reads inbox.workers');
is($node->safe_psql('restored', q{SELECT inbox.claim('newcomer', 'n-1'), inbox.claim('billing', 'n-1')}),
	't|t', 'and a new consumer registers after the restored ones');

$node->stop;
done_testing();
