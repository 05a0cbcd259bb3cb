# The purge workers delete delivered outgoing messages once inbox.outbox_retention has passed
# since their delivery, in batches, and log it; undelivered ones (pending, leased, dead) and
# recently delivered ones stay, whatever their age.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('outbox_purge', <<'EOF_CONF');
inbox.outbox_retention = '1h'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = 100
EOF_CONF
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION inbox');

# $count messages in state $state, sent $sent ago (their ids a UUIDv7 of then, as inbox.send
# makes them), delivered $delivered ago (NULL: not delivered).
sub old_messages
{
	my ($payload, $count, $sent, $delivered, $state) = @_;
	$state //= 'pending';
	my $delivered_at = defined $delivered ? "now() - interval '$delivered'" : 'NULL';
	$node->safe_psql('shop', qq{
		INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, delivered_at,
		                                   dead_at, leased_by, id, destination, payload)
		SELECT nextval('inbox.outbox_ordinal'), now() - interval '$sent',
		       now() + interval '1 hour', $delivered_at,
		       CASE WHEN '$state' = 'dead' THEN now() END,
		       CASE WHEN '$state' = 'leased' THEN 'relay-1' END,
		       encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
		           PLACING substring(int8send(floor(extract(epoch FROM now() - interval '$sent')
		                                            * 1000)::bigint) FROM 3)
		           FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid,
		       'orders', '"$payload"'
		FROM generate_series(1, $count)});
}

my $log_offset = -s $node->logfile;
old_messages('expired', 250, '3 days', '2 days');
old_messages('recent', 10, '3 days', '10 minutes');
old_messages('pending', 5, '30 days', undef);
old_messages('leased', 5, '30 days', undef, 'leased');
old_messages('dead', 5, '30 days', undef, 'dead');

ok( $node->poll_query_until('shop',
		q{SELECT count(*) = 0 FROM inbox.outbox_messages WHERE payload = '"expired"'}),
	'the workers delete the messages delivered before inbox.outbox_retention');
$node->wait_for_log(
	qr/inbox purge worker of database "shop" deleted \d+ delivered outgoing messages/,
	$log_offset);
pass('the deletions are logged');
ok(wait_for_next_cycle($node, 'shop', 'shop'), 'another whole cycle ran');
is( $node->safe_psql('shop',
		q{SELECT string_agg(payload #>> '{}' || ':' || n, ' ' ORDER BY payload #>> '{}')
		  FROM (SELECT payload, count(*) n FROM inbox.outbox_messages GROUP BY 1) c}),
	'dead:5 leased:5 pending:5 recent:10',
	'undelivered messages, whatever their age, and recently delivered ones stay');
is($node->safe_psql('shop', "SELECT total_deleted FROM inbox.workers WHERE database = 'shop'"),
	'0', 'inbox.workers counts markers only');

done_testing();
