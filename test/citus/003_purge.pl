# The purge of a distributed marker table: one node at a time whichever nodes preload the library,
# no distributed deadlock between purges, and a purge worker cancelled by Citus's distributed
# deadlock detection says so in inbox.workers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;
use InboxTest;

my $cluster = citus_cluster('purge', <<'EOF_CONF');
inbox.retention = '1min'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = 500
EOF_CONF
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };

distribute_table($cluster, 'inbox.messages', 'message_id');

sub set_purge_worker
{
	my ($node, $value) = @_;
	$node->append_conf('postgresql.conf', "inbox.purge_worker = $value");
	$node->reload;
}

# A distributed deadlock: a client transaction updates marker A (on worker2) and then marker B
# (on worker1); the coordinator's purge worker deletes both in one statement, which gets B and
# then waits for A. Citus's deadlock detection cancels the younger transaction: the purge.
my ($marker_a) = grep { shard_node($cluster, 'inbox.messages', $_) eq 'worker2' }
  map { "dl-$_" } 1 .. 20;
my ($marker_b) = grep { shard_node($cluster, 'inbox.messages', $_) eq 'worker1' }
  map { "dl-$_" } 1 .. 20;
$coordinator->safe_psql('postgres', qq{INSERT INTO inbox.messages VALUES
    ('deadlock', '$marker_a', now() - interval '1 hour'),
    ('deadlock', '$marker_b', now() - interval '1 hour')});
my $client = $coordinator->background_psql('postgres', on_error_stop => 0);
my $client_gpid = $client->query_safe('SELECT citus_backend_gpid()');
$client->query_safe('BEGIN');
$client->query_safe(qq{UPDATE inbox.messages SET processed_at = processed_at
    WHERE message_id = '$marker_a'});
my $log_offset = -s $coordinator->logfile;
set_purge_worker($coordinator, 'on');
ok( $coordinator->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM citus_lock_waits WHERE blocking_gpid = $client_gpid"),
	'the purge worker waits for the client\'s marker A');
my ($updated) = $client->query(qq{UPDATE inbox.messages SET processed_at = processed_at
    WHERE message_id = '$marker_b'});
is($client->{stderr}, '', 'the client gets marker B once the purge is cancelled');
$client->query_safe('COMMIT');
$client->quit;
$coordinator->wait_for_log(
	qr/ERROR:  canceling the transaction since it was involved in a distributed deadlock/,
	$log_offset);
pass('Citus cancelled the purge worker for a distributed deadlock');
ok( $coordinator->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'deadlock'}),
	'the next purge worker deletes both markers');
my $last_error = $coordinator->safe_psql('postgres',
	q{SELECT last_error FROM inbox.workers WHERE database = 'postgres'});
TODO:
{
	local $TODO = 'issue 11 (2): the worker records the error before Citus names the deadlock';
	like($last_error, qr/distributed deadlock/, 'inbox.workers.last_error names the deadlock');
}
set_purge_worker($coordinator, 'off');

# CALL inbox.purge() on all three nodes at once, four times over: no error, every marker gone.
# Each purge deletes by consumer over all four shards at once, so that two purges lock the same
# markers in different orders.
my @sessions = map { $_->background_psql('postgres', on_error_stop => 0) } @{ $cluster->{nodes} };
$_->query_safe('SET inbox.purge_batch_size = 2000') for @sessions;
my ($errors, $deleted, $expected) = ('', 0, 0);
for my $round (1 .. 4)
{
	$coordinator->safe_psql('postgres', qq{
        INSERT INTO inbox.messages (consumer, message_id, processed_at)
        SELECT 'round$round-' || g % 5, 'r$round-' || g, now() - interval '1 hour'
        FROM generate_series(1, 40000) g});
	$expected += 40000;
	$_->query_until(qr/started/, "\\echo started\nCALL inbox.purge();\n") for @sessions;
	for my $session (@sessions)
	{
		my ($output) = $session->query('');
		$deleted += $_ for $output =~ /^(\d+)$/mg;
		$errors .= $session->{stderr};
		$session->{stderr} = '';
	}
}
$_->quit for @sessions;
# A deadlock happens in most runs of this test, not in all: when none does, the TODO tests pass.
TODO:
{
	local $TODO = 'issue 11 (2): the purge lock is one node\'s advisory lock';
	is($errors, '', 'no purge failed (distributed deadlocks between the nodes\' purges)');
	is($deleted, $expected, 'the purges reported every deleted marker once');
	is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.messages'), '0',
		'every expired marker is gone');
}
# What a cancelled purge left behind, so that no marker is left for the test below.
$coordinator->safe_psql('postgres', 'CALL inbox.purge()');

# While a purge is in progress on the coordinator (a transaction that called inbox.purge() and
# has not committed), no node's purge worker deletes from the distributed table.
my $purging = $coordinator->background_psql('postgres');
$purging->query_safe('BEGIN');
$purging->query_safe('CALL inbox.purge()');
add_markers($coordinator, 'postgres', 'while-purging', 300, '1 hour');
my $total_deleted = q{SELECT coalesce(sum(total_deleted), 0) FROM inbox.workers
    WHERE database = 'postgres'};
my @deleted_before = on_nodes($cluster, $total_deleted);
set_purge_worker($_, 'on') for @{ $cluster->{nodes} };
ok(wait_for_next_cycle($_, 'postgres', 'postgres'), $_->name . ': a purge worker cycle ran')
  for @{ $cluster->{nodes} };
TODO:
{
	local $TODO = 'issue 11 (2): every node that preloads the library purges the distributed table';
	is(marker_count($coordinator, 'postgres', 'while-purging'), '300',
		'no other purge ran beside the one in progress');
	my @deleted_after = on_nodes($cluster, $total_deleted);
	is(join(' ', map { $deleted_after[$_] - $deleted_before[$_] } 0 .. 2),
		'0 0 0', 'no purge worker deleted anything meanwhile');
}
$purging->query_safe('COMMIT');
$purging->quit;
ok($coordinator->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.messages'),
	'after the purge in progress commits, the workers purge');

$_->stop for @{ $cluster->{nodes} };
done_testing();
