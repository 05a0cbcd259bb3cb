# pg_upgrade from an older PostgreSQL major to this one keeps what inbox holds: every marker of
# every consumer (a few thousand, ids of every stored form) is a duplicate afterwards, the
# consumers keep their ids and settings, stored results and payload fingerprints answer as
# before, a consumer's own retention still decides the purge, new claims and new consumers
# work, and each database keeps its extension version until ALTER EXTENSION inbox UPDATE. The
# outbox keeps its messages, delivered, pending, leased and dead, and its send order (each key
# goes out in order, a message sent after the upgrade after the old ones of its key); streams
# keep their positions, which claims answer from. What lives in shared memory is not carried
# (docs/upgrading.md): the failed attempts and the counters start anew, and the tables the DBA
# keeps them in before the upgrade come across.
#
# It needs the older major with inbox installed for it: INBOX_UPGRADE_FROM_BINDIR, its bindir
# (test/run.sh sets it when UPGRADE_FROM_PG_CONFIG names that major's pg_config; `make
# test-upgrade PG_MAJOR=17` runs it in a chroot with PostgreSQL 15 beside 17).
use strict;
use warnings;
use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $old_bindir = $ENV{INBOX_UPGRADE_FROM_BINDIR};
plan skip_all => 'no older major at hand: INBOX_UPGRADE_FROM_BINDIR names the bindir of one with '
  . 'inbox installed (test/run.sh sets it from UPGRADE_FROM_PG_CONFIG; make test-upgrade PG_MAJOR=17)'
  unless $old_bindir;

# The purge workers run during the upgrade, as on a server where they are on; the database whose
# expired markers the test purges itself is exempt. Both clusters have data checksums (18's
# initdb enables them by default, and pg_upgrade wants the same on both sides).
my $settings = "inbox.purge_interval = '1s'\n";
my $old = inbox_node('old', $settings,
	install_path => dirname($old_bindir), extra => ['--data-checksums']);
my $new = inbox_node('new', $settings, extra => ['--data-checksums'], start => 0);
my ($old_major, $new_major) = map { $_->pg_version->major } $old, $new;
note "pg_upgrade from $old_major to $new_major";
cmp_ok($old_major, '<', $new_major, 'the older major is older');

$old->safe_psql('postgres', q{
	CREATE DATABASE shop;
	ALTER DATABASE shop SET inbox.purge_worker = off;
	CREATE DATABASE legacy;
	CREATE ROLE app LOGIN;
	CREATE ROLE other_app LOGIN;
});

# shop, at the version this tree installs (1.3): three consumers with ids of every stored form
# (canonical UUID, upper-case UUID, 16-byte ids, others), over a thousand each of UUIDs and of
# numbered ids, so that the markers and their indexes span many pages; consumers' own settings,
# a stored result, a payload's fingerprint, a forgotten marker, a message that failed up to its
# consumer's limit, markers past shipping's retention, the application's grants, a consumer
# owned by the application's role.
$old->safe_psql('shop', q{
	CREATE EXTENSION inbox;
	SELECT inbox.grant_access('app', 'consume'), inbox.grant_access('other_app', 'consume');
} . message_ids_sql(1200) . q{
	SELECT count(inbox.claim(c, i.message_id)) FROM ids i, (VALUES ('billing'), ('shipping'), ('Billing')) v(c);
	SELECT inbox.configure_consumer('billing', retention => '30 days', max_attempts => 3);
	SELECT inbox.configure_consumer('shipping', retention => '2 hours 30 minutes');
	INSERT INTO inbox.messages (consumer, message_id, processed_at)
		SELECT 'shipping', 'old-' || g, now() - interval '3 hours' FROM generate_series(1, 500) g;
	INSERT INTO inbox.messages (consumer, message_id, processed_at)
		SELECT 'billing', 'old-' || g, now() - interval '3 hours' FROM generate_series(1, 500) g;
	SELECT inbox.forget('billing', 'msg-1');
	BEGIN;
	SELECT outcome FROM inbox.receive('checkout', 'req-1', '{"sku": "A-1", "qty": 2}');
	SELECT inbox.complete('checkout', 'req-1', '{"status": 201, "order": 7731}');
	COMMIT;
	SELECT outcome FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 1}');
	SELECT inbox.configure_consumer('checkout', owner => 'app');
});
$old->safe_psql('shop', q{BEGIN; SELECT inbox.claim('billing', 'poison-1'); ROLLBACK;})
  for 1 .. 3;
is($old->safe_psql('shop', q{SELECT outcome FROM inbox.receive('billing', 'poison-1')}),
	'poisoned', "on $old_major the message has failed up to billing's limit");

# The outbox: six messages of two keys, sent in a transaction that claims their cause, the first
# one delivered; a message leased for a day and one dead after its only attempt.
$old->safe_psql('shop', q{
	BEGIN;
	SELECT inbox.claim('billing', 'order-paid-41');
	SELECT count(inbox.send('orders', jsonb_build_object('n', g), 'k-' || g % 2,
	                        '{"content-type": "application/json"}'))
	FROM generate_series(0, 5) g;
	COMMIT;
	SELECT inbox.relay_done(array_agg(id)) FROM inbox.relay_take('relay-1', 1);
	SELECT inbox.send('leased', '"leased"'), inbox.send('dead', '"dead"');
	SELECT count(*) FROM inbox.relay_take('relay-1', 10, '1 day', ARRAY['leased']);
	SET inbox.outbox_max_attempts = 1;
	SELECT inbox.relay_failed(array_agg(id), 'refused')
	FROM inbox.relay_take('relay-1', 10, destinations => ARRAY['dead']);
});
is( $old->safe_psql('shop', q{
		SELECT string_agg(coalesce(o.key, '-') || ':'
		                  || coalesce(m.payload ->> 'n', m.payload #>> '{}', '-') || ':' || o.state
		                  || ':' || o.attempts, ' ' ORDER BY m.ordinal NULLS FIRST)
		FROM inbox.outbox o LEFT JOIN inbox.outbox_messages m USING (id)}),
	'k-0:-:delivered:1 k-1:1:pending:0 k-0:2:pending:0 k-1:3:pending:0 k-0:4:pending:0 '
	  . 'k-1:5:pending:0 -:leased:leased:1 -:dead:dead:1',
	"on $old_major the outbox holds delivered, pending, leased and dead messages");

# Streams: positions claimed with and without contiguous, one by a polled batch.
$old->safe_psql('shop', q{
	SELECT inbox.claim_position('totals', 'orders/0', 41), inbox.claim_position('totals', 'orders/1', 7);
	SELECT inbox.claim_positions('totals', 'orders/2', ARRAY[100, 101, 103]);
	SELECT inbox.claim_position('ledger', 'account-42', 1, true),
	       inbox.claim_position('ledger', 'account-42', 2, true);
});
is( $old->safe_psql('shop', q{
		SELECT string_agg(consumer || ':' || stream || ':' || position, ' ' ORDER BY consumer, stream)
		FROM inbox.streams}),
	'ledger:account-42:2 totals:orders/0:41 totals:orders/1:7 totals:orders/2:103',
	"on $old_major the streams have their positions");

# What the test compares with after the upgrade, and, as docs/upgrading.md asks of a DBA, the
# failed attempts and the counters, which pg_upgrade does not carry.
$old->safe_psql('shop', q{
	CREATE TABLE markers_before AS SELECT consumer, message_id, processed_at FROM inbox.messages;
	CREATE TABLE registry_before AS
		SELECT id, name, retention, max_attempts, registered_at, owner FROM inbox.consumer_registry;
	CREATE TABLE inbox_attempts_before_upgrade AS SELECT * FROM inbox.attempts;
	CREATE TABLE inbox_stats_before_upgrade AS SELECT * FROM inbox.stats;
	CREATE TABLE outbox_before AS
		SELECT o.*, m.ordinal, m.headers, m.payload FROM inbox.outbox o
			LEFT JOIN inbox.outbox_messages m USING (id);
	CREATE TABLE positions_before AS
		SELECT consumer_id, stream, position, updated_at FROM inbox.stream_positions;
});
cmp_ok($old->safe_psql('shop', 'SELECT count(*) FROM markers_before'), '>', 8000,
	'thousands of markers before the upgrade');

# legacy, at 1.1, as a database not updated yet is.
$old->safe_psql('legacy', q{
	CREATE EXTENSION inbox VERSION '1.1';
	SELECT count(inbox.claim('orders', 'order-' || g)) FROM generate_series(1, 2000) g;
	SELECT inbox.configure_consumer('orders', retention => '7 days');
	CREATE TABLE markers_before AS SELECT consumer, message_id, processed_at FROM inbox.messages;
});
$old->stop;

# The upgrade, as docs/upgrading.md gives it: a check first, then --link.
my @upgrade = (
	'pg_upgrade', '--no-sync',
	'--old-bindir' => $old_bindir,
	'--new-bindir' => $new->config_data('--bindir'),
	'--old-datadir' => $old->data_dir,
	'--new-datadir' => $new->data_dir,
	'--old-port' => $old->port,
	'--new-port' => $new->port,
	'--socketdir' => $new->host);
# pg_upgrade writes its logs in its working directory before it knows the new data directory.
chdir ${PostgreSQL::Test::Utils::tmp_check};
command_ok([ @upgrade, '--check' ], 'pg_upgrade --check passes');
command_ok([ @upgrade, '--link' ], "pg_upgrade --link from $old_major to $new_major");
$new->start;

is( $new->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'")
	  . ' ' . $new->safe_psql('legacy', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	'1.3 1.1', 'each database keeps its extension version');

# What a database must answer after the upgrade, before any new write changes it.
sub check_markers_kept
{
	my ($db, $label) = @_;
	is( $new->safe_psql($db, q{
			SELECT count(*) FROM markers_before b FULL JOIN inbox.messages m
			    USING (consumer, message_id, processed_at)
			WHERE b.consumer IS NULL OR m.consumer IS NULL}),
		'0', "$label: every marker is there, ids and times as they were");
	is( $new->safe_psql($db, q{
			SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) FROM markers_before}),
		'0', "$label: every message processed before is a duplicate");
	return;
}

check_markers_kept('shop', 'shop, at 1.3');
check_markers_kept('legacy', 'legacy, at 1.1 on the new major');
is( $new->safe_psql('shop', q{
		SELECT count(*) FROM (
		    (TABLE registry_before
		     EXCEPT ALL SELECT id, name, retention, max_attempts, registered_at, owner FROM inbox.consumer_registry)
		    UNION ALL
		    (SELECT id, name, retention, max_attempts, registered_at, owner FROM inbox.consumer_registry
		     EXCEPT ALL TABLE registry_before)) d}),
	'0', 'every consumer keeps its id and its settings');
is( $new->safe_psql('shop', q{
		SELECT count(*) FROM (
		    (TABLE outbox_before
		     EXCEPT SELECT o.*, m.ordinal, m.headers, m.payload FROM inbox.outbox o
			LEFT JOIN inbox.outbox_messages m USING (id))
		    UNION ALL
		    (SELECT o.*, m.ordinal, m.headers, m.payload FROM inbox.outbox o
			LEFT JOIN inbox.outbox_messages m USING (id)
		     EXCEPT TABLE outbox_before)) d}),
	'0', 'every outgoing message is there: ids, ordinals, payloads, causes, leases, attempts, states');
is( $new->safe_psql('shop', q{
		SELECT count(*) FROM (
		    (TABLE positions_before
		     EXCEPT SELECT consumer_id, stream, position, updated_at FROM inbox.stream_positions)
		    UNION ALL
		    (SELECT consumer_id, stream, position, updated_at FROM inbox.stream_positions
		     EXCEPT TABLE positions_before)) d}),
	'0', "every stream keeps its consumer's id and its position");
is( $new->safe_psql('shop', q{
		SELECT outcome || ' ' || result FROM inbox.receive('checkout', 'req-1', '{"qty": 2, "sku": "A-1"}')}),
	'duplicate {"order": 7731, "status": 201}', 'a duplicate comes with its stored result');
is( $new->safe_psql('shop', q{
		SELECT outcome FROM inbox.receive('checkout', 'req-2', '{"sku": "B-7", "qty": 9}')}),
	'payload_mismatch', 'another payload under a known id is a mismatch');

# Shared memory starts anew: no failed attempts, counters from zero since the first start; what
# the DBA kept in tables came across, and the query of docs/upgrading.md finds the poisoned one.
is($new->safe_psql('shop', 'SELECT count(*) FROM inbox.attempts'),
	'0', 'the failed attempts are not carried');
is( $new->safe_psql('shop', q{
		SELECT a.message_id || ' ' || a.failures
		FROM inbox_attempts_before_upgrade a
		JOIN inbox.consumers c ON c.consumer = a.consumer
		WHERE a.failures >= c.max_attempts}),
	'poison-1 3', 'the attempts kept before the upgrade name the poisoned message');
is( $new->safe_psql('shop', q{
		SELECT count(*) FROM inbox_stats_before_upgrade WHERE consumer = 'billing' AND applied > 0}),
	'1', 'the counters kept before the upgrade came across');

# New work: a new message is processed once, a new consumer registers above the highest id, the
# application role still claims, the forgotten message is new.
is($new->safe_psql('shop', q{SELECT inbox.claim('billing', 'after-1')}),
	't', 'a new message is processed');
is($new->safe_psql('shop', q{SELECT inbox.claim('billing', 'after-1')}),
	'f', 'and its copy is a duplicate');
is($new->safe_psql('shop', q{SELECT inbox.claim('billing', 'msg-1')}),
	't', 'the message forgotten before the upgrade is new');
is( $new->safe_psql('shop', q{SELECT inbox.claim('newcomer', 'n-1')}, extra_params => [ '-U', 'app' ]),
	't', 'the application role registers a new consumer');
is( $new->safe_psql('shop', q{
		SELECT (SELECT id FROM inbox.consumer_registry WHERE name = 'newcomer')
		       - (SELECT max(id) FROM registry_before)}),
	'1', 'the new consumer takes the id above the highest');
is( $new->safe_psql('shop', q{SELECT applied FROM inbox.stats WHERE consumer = 'newcomer'}),
	'1', 'the counters count again');

# The outbox: a send on the new major is numbered after every message of the old one; a relay
# drains each key in order, one message of a key at a time, the new message last of its key; the
# message leased for a day and the dead one stay out of the drain; released, the dead message
# goes out with a fresh count of attempts.
$new->safe_psql('shop', q{SELECT inbox.send('orders', '{"n": 6}', 'k-0')});
is( $new->safe_psql('shop', q{
		SELECT ordinal > (SELECT max(ordinal) FROM outbox_before)
		FROM inbox.outbox_messages WHERE payload = '{"n": 6}'}),
	't', 'a send after the upgrade is numbered after every message sent before it');
my (@batches, $delivered);
while (@batches < 10)
{
	my $batch = $new->safe_psql('shop', q{
		WITH taken AS (SELECT * FROM inbox.relay_take('relay-2', 10))
		SELECT string_agg(coalesce(key, '-') || ':' || coalesce(payload ->> 'n', payload #>> '{}'),
		                  ' ' ORDER BY key),
		       inbox.relay_done(array_agg(id))
		FROM taken HAVING count(*) > 0});
	last if $batch eq '';
	my ($messages, $done) = split /\|/, $batch;
	push @batches, $messages;
	$delivered += $done;
}
is(join('|', @batches), 'k-0:2 k-1:1|k-0:4 k-1:3|k-0:6 k-1:5',
	'each key goes out in send order, the message sent after the upgrade last of its key');
is($delivered, 6, 'every message taken is delivered');
is( $new->safe_psql('shop', q{
		SELECT inbox.relay_release(ARRAY(SELECT id FROM inbox.outbox WHERE state = 'dead'));
		WITH taken AS (SELECT * FROM inbox.relay_take('relay-2', 10))
		SELECT string_agg(payload #>> '{}' || ' attempt ' || attempt, ' '),
		       inbox.relay_done(array_agg(id))
		FROM taken HAVING count(*) > 0}),
	"1\ndead attempt 1|1", 'the dead message, released, goes out with fresh attempts');
is( $new->safe_psql('shop', q{SELECT string_agg(state || ':' || leased_by, ' ') FROM inbox.outbox
		WHERE state <> 'delivered'}),
	'leased:relay-1', 'the lease taken before the upgrade still holds its message');

# Streams: a claim of a committed position is a duplicate, the one after it is next, a
# contiguous claim past the next position is a gap; the streams move from where they were.
is( join(' ', map { $new->safe_psql('shop', "SELECT $_") }
		q{inbox.claim_position('totals', 'orders/0', 41)},
		q{inbox.claim_position('totals', 'orders/0', 42)},
		q{inbox.claim_position('totals', 'orders/1', 7)},
		q{inbox.claim_position('totals', 'orders/1', 8)},
		q{inbox.claim_positions('totals', 'orders/2', ARRAY[101, 103, 104])},
		q{inbox.claim_position('ledger', 'account-42', 2, true)},
		q{inbox.claim_position('ledger', 'account-42', 4, true)},
		q{inbox.claim_position('ledger', 'account-42', 3, true)}),
	'duplicate next duplicate next {104} duplicate gap next',
	'claims answer from the positions committed before the upgrade');
is( $new->safe_psql('shop', q{
		SELECT string_agg(consumer || ':' || stream || ':' || position, ' ' ORDER BY consumer, stream)
		FROM inbox.streams}),
	'ledger:account-42:3 totals:orders/0:42 totals:orders/1:8 totals:orders/2:104',
	'the streams moved on from their positions');

# Retention: shipping's own window (2 h 30 min) purges its 500 markers of three hours ago,
# billing's (30 days) keeps its own.
$new->safe_psql('shop', 'CALL inbox.purge()');
is( $new->safe_psql('shop', q{
		SELECT string_agg(consumer || ' ' || count, ', ' ORDER BY consumer) FROM (
		    SELECT b.consumer, count(*) FROM markers_before b
		    WHERE NOT EXISTS (SELECT FROM inbox.messages m
		                      WHERE (m.consumer, m.message_id) = (b.consumer, b.message_id))
		    GROUP BY b.consumer) gone}),
	'shipping 500', "the purge honours each consumer's retention");

# ALTER EXTENSION inbox UPDATE: nothing to do at 1.3; 1.1 goes to 1.3 and keeps every marker.
$new->safe_psql('shop', 'ALTER EXTENSION inbox UPDATE');
$new->safe_psql('legacy', 'ALTER EXTENSION inbox UPDATE');
is( $new->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'")
	  . ' ' . $new->safe_psql('legacy', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	'1.3 1.3', 'ALTER EXTENSION inbox UPDATE brings the 1.1 database to 1.3');
check_markers_kept('legacy', 'legacy, updated to 1.3');
is( $new->safe_psql('legacy', q{SELECT retention FROM inbox.consumers WHERE consumer = 'orders'}),
	'7 days', "legacy: the consumer's retention is kept through the update");

# The owner is kept: pg_upgrade keeps the roles' OIDs.
is( $new->safe_psql('shop', q{SELECT inbox.claim('checkout', 'after-upgrade-1')},
		extra_params => [ '-U', 'app' ]),
	't', "the owner of a consumer claims for it on $new_major");
my (undef, undef, $refused) = $new->psql('shop', q{SELECT inbox.claim('checkout', 'after-upgrade-2')},
	extra_params => [ '-U', 'other_app' ]);
like($refused, qr/permission denied for consumer "checkout"/, 'another role is still refused');

$new->stop;
done_testing();
