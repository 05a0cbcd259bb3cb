# The outbox on a coordinator whose markers are distributed: it stays a local table of the
# coordinator (docs/citus.md), and a transaction that applies a message (its marker on a worker)
# and sends commits both or neither; the message records its cause and a relay takes it there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('outbox');
my $coordinator = $cluster->{coordinator};
distribute_inbox($cluster);
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION pay(payload jsonb) RETURNS void LANGUAGE sql
	AS $$ SELECT inbox.send('orders', payload, key => payload ->> 'order') $$;
});

is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition
		  WHERE logicalrelid = 'inbox.outbox_messages'::regclass}),
	'0', 'the outbox is not distributed');

is( $coordinator->safe_psql('postgres', q{
		BEGIN;
		SELECT inbox.apply('billing', 'm-1', 'pay(jsonb)', '{"order": "41"}');
		COMMIT;
		SELECT cause_consumer || ':' || cause_message_id || ':' || state FROM inbox.outbox;}),
	"t\nbilling:m-1:pending", 'apply and send commit together, the send naming its cause');
$coordinator->psql('postgres', q{
	BEGIN;
	SELECT inbox.apply('billing', 'm-2', 'pay(jsonb)', '{"order": "42"}');
	ROLLBACK;});
is( $coordinator->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM inbox.messages WHERE message_id = 'm-2') || ':'
		  || (SELECT count(*) FROM inbox.outbox_messages WHERE payload = '{"order": "42"}')}),
	'0:0', 'a rollback takes the marker on its worker and the message together');
is($coordinator->safe_psql('postgres',
		q{SELECT string_agg(payload ->> 'order', ' ') FROM inbox.relay_take('relay-1')}),
	'41', 'a relay takes the message on the coordinator');

done_testing();
