# A move to a new server with logical replication (docs/operations.md, "Moving to a new server or
# major with logical replication"): one publication of the extension's tables (the markers', the
# outbox's two and the streams' positions), a
# subscriber whose schema comes from a schema-only dump (the extension with empty tables), the
# initial copy and the claims streamed after it, then the cutover: the claims stop on the
# publisher, the subscriber catches up, the subscription is dropped. On the subscriber every
# marker is a duplicate, stored results and payload fingerprints answer as on the publisher, the
# consumers it knows claim new messages, and a new consumer's first claim registers it at once,
# above the replicated ids (the registry's ids replicate; in 1.1 they came from a sequence, which
# does not, and the first new consumers failed on a duplicate key). The outgoing messages come
# across, pending and delivered, and the send order's sequence, which does not, is set at the
# cutover: a message sent on the subscriber goes out after the pending ones of its key. A stream
# resumes at its position.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $publisher = inbox_node('publisher', undef, allows_streaming => 'logical');
my $subscriber = inbox_node('subscriber');
$publisher->safe_psql('postgres', 'CREATE DATABASE shop');
$publisher->safe_psql('shop', q{
	CREATE EXTENSION inbox;
	CREATE ROLE app LOGIN;
	SELECT inbox.grant_access('app', 'consume');
});

# The publisher in use: markers of several consumers with ids of every stored form, settings, a
# stored result and a payload's fingerprint.
$publisher->safe_psql('shop', q{
	CREATE TABLE ids (message_id text);
	INSERT INTO ids VALUES ('0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f'), ('0B6C1A2E-7F3A-4C9D-8E21-5A6B7C8D9E0F'),
		('abcdefghijklmnop'), ('orders-2026-000123456'), (repeat(U&'\00E9', 64)), (U&'e\0301');
	INSERT INTO ids SELECT gen_random_uuid()::text FROM generate_series(1, 300);
	INSERT INTO ids SELECT 'msg-' || g FROM generate_series(1, 300) g;
	SELECT count(inbox.claim(c, i.message_id)) FROM ids i, (VALUES ('billing'), ('shipping'), ('Billing')) v(c);
	SELECT inbox.configure_consumer('billing', retention => '3 days', max_attempts => 5);
	BEGIN;
	SELECT outcome FROM inbox.receive('checkout', 'req-1', '{"sku": "A-1", "qty": 2}');
	SELECT inbox.complete('checkout', 'req-1', '{"status": 201, "order": 7731}');
	COMMIT;
	SELECT outcome FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 1}');
	SELECT inbox.send('orders', '{"n": 1}', 'k-1'), inbox.send('orders', '{"n": 2}', 'k-1'),
	       inbox.send('orders', '{"n": 3}', 'k-2');
	SELECT inbox.relay_done(array_agg(id)) FROM inbox.relay_take('relay-1', 10);
	SELECT inbox.claim_position('totals', 'orders/0', 41);
});

# What to publish: the tables by name, in one publication (no foreign keys order them), to a role
# that may replicate and read them. Not inbox.outbox_scan_floor, which a publication FOR ALL
# TABLES would hold too: the subscriber has its one row already, and it holds the publisher's
# transaction ids.
my $published_tables = 'inbox.consumer_registry, inbox.markers, inbox.marker_details, '
  . 'inbox.outbox_messages, inbox.outbox_delivered, inbox.stream_positions';
$publisher->safe_psql('shop', qq{
	CREATE ROLE replicator LOGIN REPLICATION;
	GRANT USAGE ON SCHEMA inbox TO replicator;
	GRANT SELECT ON $published_tables TO replicator;
	CREATE PUBLICATION inbox_move FOR TABLE $published_tables;
	CREATE PUBLICATION everything FOR ALL TABLES;
});
is( $publisher->safe_psql('shop', q{
		SELECT string_agg(tablename, ' ' ORDER BY tablename) FROM pg_publication_tables
		WHERE pubname = 'everything' AND schemaname = 'inbox'
		  AND tablename NOT IN (SELECT tablename FROM pg_publication_tables
		                        WHERE pubname = 'inbox_move')}),
	'outbox_scan_floor',
	'the publication names every table of the extension that FOR ALL TABLES holds, but the floor');
$publisher->safe_psql('shop', 'DROP PUBLICATION everything');

# The new server's schema, as the docs make it: the roles (those that exist already fail to be
# created again, which changes nothing), then the database's schema, with the extension and the
# grants but none of the markers.
my $roles = "${PostgreSQL::Test::Utils::tmp_check}/roles.sql";
my $schema = "${PostgreSQL::Test::Utils::tmp_check}/schema.sql";
$publisher->command_ok(
	[ 'pg_dumpall', '--roles-only', '--file', $roles, '--dbname', $publisher->connstr('postgres') ],
	'pg_dumpall --roles-only of the publisher');
$publisher->command_ok(
	[ 'pg_dump', '--schema-only', '--no-publications', '--no-subscriptions', '--file', $schema,
		'--dbname', $publisher->connstr('shop') ],
	'pg_dump --schema-only of its database');
$subscriber->psql('postgres', slurp_file($roles), on_error_stop => 0);
$subscriber->safe_psql('postgres', 'CREATE DATABASE shop');
$subscriber->safe_psql('shop', slurp_file($schema));
is( $subscriber->safe_psql('shop', q{
		SELECT (SELECT count(*) FROM inbox.consumer_registry) + (SELECT count(*) FROM inbox.markers)
		       + (SELECT count(*) FROM inbox.marker_details),
		       has_function_privilege('app', 'inbox.claim(text, text)', 'EXECUTE')}),
	'0|t', 'the subscriber has the extension with empty tables, and the grants');

my $publisher_shop = $publisher->connstr . ' dbname=shop user=replicator';
$subscriber->safe_psql('shop',
	"CREATE SUBSCRIPTION inbox_move CONNECTION '$publisher_shop' PUBLICATION inbox_move");
$subscriber->wait_for_subscription_sync($publisher, 'inbox_move', 'shop');

# Claims go on on the publisher and stream to the subscriber: a consumer registered after the
# initial copy, new settings, a stored result added, a forgotten marker, a purge.
$publisher->safe_psql('shop', q{
	UPDATE inbox.messages SET processed_at = now() - interval '4 days'
	WHERE consumer = 'billing' AND message_id IN ('msg-2', 'msg-3');
	CALL inbox.purge();
	SELECT count(inbox.claim('refunds', message_id)) FROM ids WHERE message_id LIKE 'msg-1%';
	SELECT count(inbox.claim('billing', 'late-' || g)) FROM generate_series(1, 50) g;
	SELECT inbox.configure_consumer('shipping', retention => '2 hours');
	SELECT inbox.complete('checkout', 'req-2', '{"status": 202}');
	SELECT inbox.forget('billing', 'msg-1');
	SELECT inbox.send('orders', '{"n": 4}', 'k-1');
	SELECT inbox.claim_position('totals', 'orders/0', 42);
});
$publisher->safe_psql('shop', q{SELECT inbox.claim('refunds', 'r-1')},
	extra_params => [ '-U', 'app' ]);

# The cutover. Claims have stopped on the publisher; every table is copied and streaming, and the
# subscriber has applied everything the publisher wrote (the checks of the docs).
ok( $subscriber->poll_query_until('shop',
		q{SELECT count(*) = 0 FROM pg_subscription_rel WHERE srsubstate <> 'r'}),
	'every table is copied and streaming');
ok( $publisher->poll_query_until('shop', q{
		SELECT replay_lsn >= pg_current_wal_lsn() FROM pg_stat_replication
		WHERE application_name = 'inbox_move'}),
	'the subscriber catches up with the publisher');
my $counts = q{
	SELECT (SELECT count(*) FROM inbox.consumer_registry) AS consumers,
	       (SELECT count(*) FROM inbox.markers) AS markers,
	       (SELECT count(*) FROM inbox.marker_details) AS details,
	       (SELECT count(*) FROM inbox.outbox) AS outgoing,
	       (SELECT count(*) FROM inbox.stream_positions) AS positions};
my $published = $publisher->safe_psql('shop', $counts);
is($subscriber->safe_psql('shop', $counts), $published, "the same counts on both: $published");
$subscriber->safe_psql('shop', 'DROP SUBSCRIPTION inbox_move');

# The same rows, exactly: the markers with their ids and times, the details, the consumers with
# their ids and settings.
for my $table (
	[ 'markers', q{SELECT consumer, message_id, processed_at FROM inbox.messages ORDER BY 1, 2} ],
	[ 'details', q{SELECT * FROM inbox.marker_details ORDER BY consumer_id, message_key} ],
	[ 'consumers', q{SELECT * FROM inbox.consumer_registry ORDER BY id} ],
	[ 'outgoing messages', q{SELECT * FROM inbox.outbox_messages ORDER BY ordinal} ],
	[ 'delivered messages', q{SELECT * FROM inbox.outbox_delivered ORDER BY id} ],
	[ 'positions', q{SELECT * FROM inbox.stream_positions ORDER BY 1, 2} ])
{
	my ($what, $query) = @$table;
	my $digest = "SELECT md5(string_agg(r::text, E'\\n')) FROM ($query) r";
	is($subscriber->safe_psql('shop', $digest), $publisher->safe_psql('shop', $digest),
		"the subscriber holds the publisher's $what");
}

is( $subscriber->safe_psql('shop', q{
		SELECT count(*) || ' ' || count(*) FILTER (WHERE inbox.claim(consumer, message_id))
		FROM (SELECT consumer, message_id FROM inbox.messages) m}),
	($publisher->safe_psql('shop', 'SELECT count(*) FROM inbox.messages')) . ' 0',
	'on the subscriber every message processed on the publisher is a duplicate');
is( $subscriber->safe_psql('shop', q{
		SELECT (SELECT outcome || ' ' || result
		        FROM inbox.receive('checkout', 'req-1', '{"qty": 2, "sku": "A-1"}'))
		       || ', ' || (SELECT outcome || ' ' || result FROM inbox.receive('checkout', 'req-2'))
		       || ', ' || (SELECT outcome::text
		                   FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 9}'))},
		extra_params => [ '-U', 'app' ]),
	'duplicate {"order": 7731, "status": 201}, duplicate {"status": 202}, payload_mismatch',
	'stored results and payload fingerprints answer as on the publisher');

# A new consumer's first claim registers it at once, above every replicated id.
my $highest = $subscriber->safe_psql('shop', 'SELECT max(id) FROM inbox.consumer_registry');
is( $subscriber->safe_psql('shop', q{SELECT inbox.claim('newcomer', 'n-1'), inbox.claim('newcomer', 'n-1')},
		extra_params => [ '-U', 'app' ]),
	't|f', 'a new consumer claims its first message on the subscriber');
is( $subscriber->safe_psql('shop', q{SELECT id FROM inbox.consumer_registry WHERE name = 'newcomer'}),
	$highest + 1, 'and takes the id above the replicated ones');
is( $subscriber->safe_psql('shop', q{
		SELECT inbox.claim('billing', 'msg-1'), inbox.claim('refunds', 'r-2'),
		       inbox.claim('billing', 'after-1'), inbox.claim('billing', 'after-1')},
		extra_params => [ '-U', 'app' ]),
	't|t|t|f', 'consumers known from the publisher claim new messages on the subscriber');
is($subscriber->safe_psql('shop', q{SELECT inbox.claim('billing', 'msg-2'), inbox.claim('billing', 'msg-4')}),
	't|f', 'a marker the publisher purged is gone on the subscriber too');
is( $subscriber->safe_psql('shop', q{
		SELECT string_agg(consumer || ' ' || coalesce(retention::text, '-') || ' '
		                  || coalesce(max_attempts::text, '-'), ', ' ORDER BY consumer)
		FROM inbox.consumers WHERE consumer IN ('billing', 'shipping')}),
	'billing 3 days 5, shipping 02:00:00 -', 'and keep their settings');

# The send order at the cutover, as the docs set it (logical replication copies no sequence):
# then a message sent on the subscriber goes out after the replicated ones of its key, each key
# drained in order, one message at a time.
$subscriber->safe_psql('shop', q{
	SELECT setval('inbox.outbox_ordinal',
	              greatest(s.last_value, (SELECT max(m.ordinal) FROM inbox.outbox_messages m)))
	FROM inbox.outbox_ordinal s;
	SELECT inbox.send('orders', '{"n": 5}', 'k-1');
});
my @drained;
for (1 .. 5)
{
	my $batch = $subscriber->safe_psql('shop', q{
		WITH taken AS (SELECT * FROM inbox.relay_take('relay-2', 10)),
		     done AS (SELECT inbox.relay_done(coalesce(array_agg(id), '{}')) FROM taken)
		SELECT string_agg(key || ':' || (payload ->> 'n'), ' ' ORDER BY key)
		FROM taken, done});
	push @drained, $batch if $batch ne '';
}
is(join(' | ', @drained), 'k-1:2 | k-1:4 | k-1:5',
	'the relay on the subscriber drains the replicated messages of a key before the new one');
is( $subscriber->safe_psql('shop', q{
		SELECT string_agg(key || ':' || state, ' ' ORDER BY created_at) FROM inbox.outbox}),
	'k-1:delivered k-1:delivered k-2:delivered k-1:delivered k-1:delivered',
	'every message delivered, those delivered on the publisher kept as delivered');
is( $subscriber->safe_psql('shop', q{
		SELECT inbox.claim_position('totals', 'orders/0', 42)::text || ' '
		       || inbox.claim_position('totals', 'orders/0', 43)::text}),
	'duplicate next', 'a stream resumes on the subscriber at its replicated position');

$subscriber->stop;
$publisher->stop;
done_testing();
