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

# $count messages labelled $label (their key) in state $state, sent $sent ago (their ids a UUIDv7
# of then, as inbox.send makes them), delivered $delivered ago (undef: not delivered).
sub old_messages
{
	my ($label, $count, $sent, $delivered, $state) = @_;
	$state //= 'pending';
	my $id = qq{encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
		           PLACING substring(int8send(floor(extract(epoch FROM now() - interval '$sent')
		                                            * 1000)::bigint) FROM 3)
		           FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid};
	$node->safe_psql('shop', defined $delivered ? qq{
		INSERT INTO inbox.outbox_delivered (created_at, delivered_at, id, attempts, destination, key)
		SELECT now() - interval '$sent', now() - interval '$delivered', $id, 1, 'orders', '$label'
		FROM generate_series(1, $count)} : qq{
		INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, dead_at, leased_by, id,
		                                   destination, key, payload)
		SELECT nextval('inbox.outbox_ordinal'), now() - interval '$sent', now() + interval '1 hour',
		       CASE WHEN '$state' = 'dead' THEN now() END,
		       CASE WHEN '$state' = 'leased' THEN 'relay-1' END, $id, 'orders', '$label', '{}'
		FROM generate_series(1, $count)});
}

my $log_offset = -s $node->logfile;
old_messages('expired', 250, '3 days', '2 days');
old_messages('recent', 10, '3 days', '10 minutes');
old_messages('pending', 5, '30 days', undef);
old_messages('leased', 5, '30 days', undef, 'leased');
old_messages('dead', 5, '30 days', undef, 'dead');

ok( $node->poll_query_until('shop',
		q{SELECT count(*) = 0 FROM inbox.outbox WHERE key = 'expired'}),
	'the workers delete the messages delivered before inbox.outbox_retention');
$node->wait_for_log(
	qr/inbox purge worker of database "shop" deleted \d+ delivered outgoing messages/,
	$log_offset);
pass('the deletions are logged');
ok(wait_for_next_cycle($node, 'shop', 'shop'), 'another whole cycle ran');
is( $node->safe_psql('shop',
		q{SELECT string_agg(key || ':' || state || ':' || n, ' ' ORDER BY key)
		  FROM (SELECT key, state, count(*) n FROM inbox.outbox GROUP BY 1, 2) c}),
	'dead:dead:5 leased:leased:5 pending:pending:5 recent:delivered:10',
	'undelivered messages, whatever their age, and recently delivered ones stay');
is($node->safe_psql('shop', "SELECT total_deleted FROM inbox.workers WHERE database = 'shop'"),
	'0', 'inbox.workers counts markers only');

done_testing();
