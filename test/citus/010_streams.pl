# Streams on a coordinator whose markers are distributed: the positions stay a local table of the
# coordinator (docs/citus.md), and a transaction that claims positions and applies a message whose
# marker is on a worker commits both or neither; the positions read, show in inbox.streams and
# inbox.stats, retire, and keep DROP EXTENSION from deleting them. A claim on a worker node, whose
# own table the coordinator never reads, is refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('streams');
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };
distribute_inbox($cluster);

is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition
		  WHERE logicalrelid = 'inbox.stream_positions'::regclass}),
	'0', 'the positions are not distributed');

$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION tally(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
	SELECT inbox.stats_reset();
});
my $position = q{SELECT coalesce(inbox.stream_position('totals', 'orders/0')::text, 'none')};
sub marker_of
{
	my ($message_id) = @_;
	return $coordinator->safe_psql('postgres',
		"SELECT count(*) FROM inbox.messages WHERE message_id = '$message_id'");
}

is( $coordinator->safe_psql('postgres', q{
		BEGIN;
		SELECT inbox.claim_position('totals', 'orders/0', 41);
		SELECT inbox.apply('billing', 'm-1', 'tally(jsonb)');
		COMMIT;}),
	"next\nt", 'a position and a message claimed in one transaction');
is($coordinator->safe_psql('postgres', $position) . ':' . marker_of('m-1'),
	'41:1', 'commit moves the stream and writes the marker on its worker');
like(marker_node($cluster, 'm-1'), qr/^worker/, 'a marker on a worker');

# A batch of positions and the message m-2 claimed in one transaction, ended by $end.
sub batch_and_message {
	my ($end) = @_;
	return $coordinator->safe_psql('postgres', qq{
		BEGIN;
		SELECT inbox.claim_positions('totals', 'orders/0', ARRAY[44, 42, 43, 41]);
		SELECT inbox.apply('billing', 'm-2', 'tally(jsonb)');
		$end;});
}
is(batch_and_message('ROLLBACK'), "{42,43,44}\nt",
	'a batch of positions and a message claimed in one transaction');
is($coordinator->safe_psql('postgres', $position) . ':' . marker_of('m-2'),
	'41:0', 'rollback moves neither the stream nor writes the marker');
is(batch_and_message('COMMIT'), "{42,43,44}\nt", 'the batch again, committed');
is($coordinator->safe_psql('postgres', $position) . ':' . marker_of('m-2'),
	'44:1', 'commit moves the stream to its last position and writes the marker');

is( $coordinator->safe_psql('postgres', q{
		SELECT inbox.claim_position('totals', 'orders/0', 43);
		SELECT inbox.claim_position('totals', 'account-7', 1, contiguous => true);
		SELECT inbox.claim_position('totals', 'account-7', 3, contiguous => true);
		SELECT inbox.claim_position('totals', 'account-8', 2, contiguous => true);}),
	"duplicate\nnext\ngap\ngap",
	'duplicates and gaps answer as on one node, a gap of a new stream after looking for a first '
	  . 'claim in flight (in a subtransaction, on the distributed table)');
is( $coordinator->safe_psql('postgres', q{
		SELECT string_agg(consumer || ':' || stream || ':' || position, ' ' ORDER BY stream)
		FROM inbox.streams}),
	'totals:account-7:1 totals:orders/0:44', 'inbox.streams shows every stream\'s position');
is( $coordinator->safe_psql('postgres', q{
		SELECT applied || ':' || duplicates FROM inbox.stats WHERE consumer = 'totals'}),
	'5:3',
	'inbox.stats counts the committed positions as applied, the duplicates as they are answered');

# A worker node has a positions table of its own (Citus created the extension there), which the
# coordinator never reads: every stream function is refused there, from a client of the worker and
# from a function that Citus delegates to the worker of a marker.
my $refused = sub {
	my ($function) = @_;
	return qr/^55000: inbox\.\Q$function\E\(\) cannot run on a Citus worker node/;
};
like(psql_error($workers[0], q{SELECT inbox.claim_position('totals', 'orders/0', 45)}),
	$refused->('claim_position'), 'claim_position on a worker node is refused');
like(psql_error($workers[0], q{SELECT inbox.claim_positions('totals', 'orders/0', '{45}')}),
	$refused->('claim_positions'), 'so is claim_positions');
like(psql_error($workers[0], q{SELECT inbox.stream_position('totals', 'orders/0')}),
	$refused->('stream_position'), 'so is stream_position, which would read no position there');
like(psql_error($workers[0], q{SELECT inbox.retire_stream('totals', 'orders/0')}),
	$refused->('retire_stream'), 'so is retire_stream');
$coordinator->safe_psql('postgres', q{
	CREATE FUNCTION claim_there(key bytea, stream text, stream_offset bigint) RETURNS text
	LANGUAGE plpgsql AS $$
	BEGIN
		RETURN inbox.claim_position('totals', stream, stream_offset);
	END $$;
	SELECT create_distributed_function('claim_there(bytea, text, bigint)', 'key',
	                                   colocate_with := 'inbox.markers');
});
like( psql_error($coordinator,
		q{SELECT claim_there(inbox.message_key('orders/0'), 'orders/0', 45)}),
	$refused->('claim_position'), 'a delegated function that claims a position is refused');
is( join(' ', map { $_->safe_psql('postgres', 'SELECT count(*) FROM inbox.stream_positions') }
		@workers),
	'0 0', 'no position is left in a worker node\'s table');
is( $coordinator->safe_psql('postgres', q{
		BEGIN;
		SELECT claim_there(inbox.message_key('orders/0'), 'orders/0', 45);
		COMMIT;}
	  . $position),
	"next\n45",
	'the same function in a transaction block, which Citus does not delegate, claims on the '
	  . 'coordinator');

is( $coordinator->safe_psql('postgres', q{
		SELECT inbox.retire_stream('totals', 'orders/0');
		SELECT inbox.retire_stream('totals', 'orders/0');}
	  . $position),
	"t\nf\nnone", 'retire_stream deletes the position, once');

# The positions keep DROP EXTENSION from deleting them, as the markers do.
$coordinator->safe_psql('postgres',
	q{DELETE FROM inbox.messages WHERE consumer = 'billing'});
like( psql_error($coordinator, 'DROP EXTENSION inbox'),
	qr/^2BP01: dropping extension inbox would delete the position of 1 stream/,
	'DROP EXTENSION is refused while a stream has a position');
$coordinator->safe_psql('postgres', q{SELECT inbox.retire_stream('totals', 'account-7')});
is(psql_error($coordinator, 'DROP EXTENSION inbox'), '', 'and allowed once it is retired');
is( join(' ',
		on_nodes($cluster, q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'})),
	'0 0 0', 'on every node');

done_testing();
