# Streams' positions are user data: they survive pg_dump/pg_restore with their consumers' names
# (a claim after the restore answers from the restored position); a committed position survives
# a crash and a claim in flight leaves none; a standby refuses a claim at once (25006) and reads
# the positions, streamed ones included.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('stream_primary', '', allows_streaming => 1);
$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql('source', q{
	CREATE EXTENSION inbox;
	SELECT inbox.claim('first-consumer', 'm-1');
	SELECT inbox.claim_position('totals', 'orders/0', 41), inbox.claim_position('totals', 'orders/1', 7);
	SELECT inbox.claim_position('ledger', 'account-42', 1, true),
	       inbox.claim_position('ledger', 'account-42', 2, true);
});
my $positions = q{SELECT string_agg(consumer || ':' || stream || ':' || position, ' '
	ORDER BY consumer, stream) FROM inbox.streams};
my $before = $node->safe_psql('source', $positions);
is($before, 'ledger:account-42:2 totals:orders/0:41 totals:orders/1:7', 'the positions to dump');

# ---- pg_dump and pg_restore -------------------------------------------------------------------
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/streams.dump";
$node->command_ok([ 'pg_dump', '--format=custom', '--file', $dump, '--dbname',
		$node->connstr('source') ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'),
		$dump ], 'pg_restore');
is($node->safe_psql('restored', $positions), $before, 'the positions restored, per consumer');
is( $node->safe_psql('restored', q{
		SELECT inbox.claim_position('totals', 'orders/0', 41) || ' '
		    || inbox.claim_position('totals', 'orders/0', 42) || ' '
		    || inbox.claim_position('ledger', 'account-42', 4, true) || ' '
		    || inbox.claim_position('a-new-consumer', 'orders/0', 41)}),
	'duplicate next gap next',
	'after the restore, claims answer from the restored positions; a new consumer has its own');

# ---- a crash ------------------------------------------------------------------------------------
$node->safe_psql('source', q{SELECT inbox.claim_position('totals', 'orders/0', 50)});
my $open = $node->background_psql('source', on_error_stop => 0);
$open->query_safe('BEGIN');
$open->query_safe(q{SELECT inbox.claim_position('totals', 'orders/0', 60)});
$node->stop('immediate');
$open->{run}->finish;    # its connection is gone with the server
$node->start;
is( $node->safe_psql('source', q{SELECT inbox.stream_position('totals', 'orders/0')}),
	'50', 'the committed position survives the crash; the claim in flight left nothing');
is($node->safe_psql('source', q{SELECT inbox.claim_position('totals', 'orders/0', 60)}),
	'next', 'the position the crash took is claimed again as next');

# ---- a streaming standby ------------------------------------------------------------------------
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('stream_standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
$node->safe_psql('source', q{SELECT inbox.claim_position('totals', 'orders/0', 61)});
$node->wait_for_catchup($standby);
for my $call (q{SELECT inbox.claim_position('totals', 'orders/0', 62)},
	q{SELECT inbox.claim_positions('totals', 'orders/0', ARRAY[62, 63])})
{
	my ($rc, $out, $err) = $standby->psql('source', "\\set VERBOSITY verbose\n$call",
		timeout => 10);
	like($err, qr/ERROR:  25006:/, "the standby refuses at once: $call");
}
is( $standby->safe_psql('source',
		q{SELECT inbox.stream_position('totals', 'orders/0') || ' '
		    || (SELECT position FROM inbox.streams WHERE stream = 'orders/0')}),
	'61 61', 'the standby reads the positions, the streamed one included');

$standby->stop;
$node->stop;
done_testing();
