# The outbox on a coordinator whose markers are distributed: it stays a local table of the
# coordinator, which inbox.distribute() and undistribute() leave alone (docs/citus.md); a
# transaction that applies a message (its marker on a worker) and sends commits both or neither,
# the message recording its cause; relays take, settle and release there, inbox.stats and
# inbox.outbox show it, and one CALL inbox.purge() deletes the expired markers on the shards and
# the delivered messages. A send on a worker node, whose own outbox no relay reads, is refused, and
# so are the relay's calls there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('outbox');
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };

sub outbox_placement
{
	return $coordinator->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM pg_dist_partition
		        WHERE logicalrelid IN ('inbox.outbox_messages'::regclass,
		                               'inbox.outbox_delivered'::regclass)) || ':'
		    || (SELECT count(*) FROM inbox.outbox)});
}

sub outbox_states
{
	return $coordinator->safe_psql('postgres', q{
		SELECT string_agg(o.key || ':' || o.state || ':' || o.attempts, ' ' ORDER BY o.key)
		FROM inbox.outbox o});
}

sub ids_of
{
	my ($orders) = @_;
	return qq{(SELECT array_agg(id) FROM inbox.outbox WHERE key IN ($orders))};
}

# A message sent before the markers are distributed stays where it is.
$coordinator->safe_psql('postgres',
	q{SELECT inbox.send('orders', '{"order": "40"}', key => '40')});
distribute_inbox($cluster);
is(outbox_placement(), '0:1',
	'inbox.distribute() leaves the outbox a local table of the coordinator, its messages kept');

$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION pay(payload jsonb) RETURNS void LANGUAGE sql
	AS $$ SELECT inbox.send('orders', payload, key => payload ->> 'order') $$;
});
is( $coordinator->safe_psql('postgres', q{
		BEGIN;
		SELECT inbox.apply('billing', 'm-1', 'pay(jsonb)', '{"order": "41"}');
		COMMIT;
		SELECT cause_consumer || ':' || cause_message_id || ':' || state FROM inbox.outbox
		WHERE cause_consumer IS NOT NULL;}),
	"t\nbilling:m-1:pending", 'apply and send commit together, the send naming its cause');
$coordinator->psql('postgres', q{
	BEGIN;
	SELECT inbox.apply('billing', 'm-2', 'pay(jsonb)', '{"order": "42"}');
	ROLLBACK;});
is( $coordinator->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM inbox.messages WHERE message_id = 'm-2') || ':'
		  || (SELECT count(*) FROM inbox.outbox_messages WHERE payload = '{"order": "42"}')}),
	'0:0', 'a rollback takes the marker on its worker and the message together');

my $outbox_stats = q{
	SELECT string_agg(coalesce(consumer, '-') || ':' || outbox_pending || ':'
	                  || (outbox_oldest_pending_age IS NOT NULL), ' ' ORDER BY consumer)
	FROM inbox.stats};
is($coordinator->safe_psql('postgres', $outbox_stats),
	'billing:1:true -:1:true',
	'inbox.stats counts the pending messages per cause, the one sent outside a claim apart');

# The relay protocol on the coordinator.
is($coordinator->safe_psql('postgres',
		q{SELECT string_agg(payload ->> 'order', ' ') FROM inbox.relay_take('relay-1')}),
	'40 41', 'a relay takes the messages on the coordinator, in send order');
is(outbox_states(), '40:leased:1 41:leased:1', 'inbox.outbox shows them leased');
is($coordinator->safe_psql('postgres', 'SELECT inbox.relay_done(' . ids_of("'41'") . ')'),
	'1', 'relay_done settles a message');
is( $coordinator->safe_psql('postgres', q{
		SET inbox.outbox_max_attempts = 1;
		SELECT inbox.relay_failed(} . ids_of("'40'") . q{, 'broker down', '0 seconds')}),
	'1', 'relay_failed records a failure');
is(outbox_states(), '40:dead:1 41:delivered:1',
	'the failed message is dead after its last attempt, the other delivered');
is( $coordinator->safe_psql('postgres',
		q{SELECT last_error FROM inbox.outbox WHERE key = '40'}),
	'broker down', 'inbox.outbox shows the error');
is($coordinator->safe_psql('postgres', 'SELECT inbox.relay_release(' . ids_of("'40'") . ')'),
	'1', 'relay_release gives the dead message new attempts');
is(outbox_states(), '40:pending:0 41:delivered:1', 'it is pending again');
is($coordinator->safe_psql('postgres', $outbox_stats),
	'billing:0:false -:1:true', 'inbox.stats counts what is still pending');

is($coordinator->safe_psql('postgres', 'SELECT inbox.undistribute()'), '',
	'inbox.undistribute()');
is(outbox_placement(), '0:2', 'leaves the outbox and its messages alone');
distribute_inbox($cluster);
is(outbox_placement(), '0:2', 'and so does distributing the markers again');

# One purge deletes the expired markers on the shards and the delivered messages: the markers
# processed an hour ago go, and so does the message delivered an hour ago; m-1's marker,
# processed now, and the pending message stay. Both messages made two hours old: their ids
# UUIDv7s of that time, as inbox.send makes them.
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION two_hours_old() RETURNS uuid LANGUAGE sql
	AS $$ SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
	          PLACING substring(int8send(floor(extract(epoch FROM now() - interval '2 hours')
	                                           * 1000)::bigint) FROM 3) FROM 1 FOR 6),
	          52, 1), 53, 1), 'hex')::uuid $$;
	UPDATE inbox.outbox_messages
	SET created_at = now() - interval '2 hours', id = two_hours_old();
	UPDATE inbox.outbox_delivered
	SET created_at = now() - interval '2 hours', delivered_at = now() - interval '1 hour',
	    id = two_hours_old();
});
insert_markers($coordinator, 'old', 20, '1 hour');
is( $coordinator->safe_psql('postgres', q{
		SET inbox.retention = '1min';
		SET inbox.outbox_retention = '1min';
		CALL inbox.purge();}),
	'20', 'CALL inbox.purge() deletes the expired markers on every shard');
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(consumer || ':' || message_id, ' ') FROM inbox.messages}),
	'billing:m-1', 'and them only');
is(outbox_states(), '40:pending:0',
	'the purge deleted the delivered message in the same run, and left the pending one');

# A worker node has an outbox table of its own (Citus created the extension there), which no
# relay reads: a send there is refused, from a client of the worker and from a function that Citus
# delegates to the worker of a marker.
my $refused = qr/^55000: inbox\.send\(\) cannot run on a Citus worker node/;
like(psql_error($workers[0], q{SELECT inbox.send('orders', '{"order": "43"}')}),
	$refused, 'a send from a client of a worker node is refused');
like(psql_error($workers[0], q{SELECT inbox.send_bytes('orders', '\x2a')}),
	$refused, 'so is send_bytes');
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION pay_there(key bytea, message_id text, payload jsonb) RETURNS boolean
	LANGUAGE plpgsql AS $$
	BEGIN
		RETURN inbox.apply('billing', message_id, 'pay(jsonb)', payload);
	END $$;
	SELECT create_distributed_function('pay_there(bytea, text, jsonb)', 'key',
	                                   colocate_with := 'inbox.markers');
});
like( psql_error($coordinator,
		q{SELECT pay_there(inbox.message_key('m-3'), 'm-3', '{"order": "43"}')}),
	$refused, 'a delegated function that sends is refused on the worker that runs it');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM inbox.messages WHERE message_id = 'm-3'}),
	'0', 'and its claim rolled back with it');
is( join(' ', map { $_->safe_psql('postgres', 'SELECT count(*) FROM inbox.outbox_messages') }
		@workers),
	'0 0', 'no message is left in a worker node\'s outbox');
is( $coordinator->safe_psql('postgres',
		q{BEGIN;
		  SELECT pay_there(inbox.message_key('m-3'), 'm-3', '{"order": "43"}');
		  COMMIT;}),
	't', 'the same function in a transaction block, which Citus does not delegate, sends on the '
	  . 'coordinator');
is(outbox_states(), '40:pending:0 43:pending:0', 'where the relays take it');

# A relay pointed at a worker node would read that node's own outbox, which no send fills, and
# report no lag: its calls are refused there, each naming itself.
for my $call (
	q{SELECT * FROM inbox.relay_take('relay-1')},
	q{SELECT inbox.relay_done('{}')},
	q{SELECT inbox.relay_failed('{}', 'down')},
	q{SELECT inbox.relay_release('{}')})
{
	my ($function) = $call =~ /(inbox\.relay_\w+)/;
	like(psql_error($workers[1], $call),
		qr/^55000: \Q$function\E\(\) cannot run on a Citus worker node/,
		"$function is refused on a worker node");
}
is($coordinator->safe_psql('postgres', q{SELECT count(*) FROM inbox.relay_take('relay-1')}),
	'2', 'and runs on the coordinator');

done_testing();
