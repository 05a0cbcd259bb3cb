# The purge of distributed markers: one purger for the whole cluster, the coordinator, whichever
# nodes preload the library (a worker node's purge worker leaves the database alone, CALL
# inbox.purge() there says where to run it), so that purges never delete side by side nor
# deadlock each other; and a purge worker cancelled by Citus's distributed deadlock detection
# says so in inbox.workers.
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

distribute_inbox($cluster);

sub set_purge_worker
{
	my ($node, $value) = @_;
	$node->append_conf('postgresql.conf', "inbox.purge_worker = $value");
	$node->reload;
}

# A distributed deadlock: a client transaction updates marker A (on worker2) and then marker B
# (on worker1); the coordinator's purge worker deletes both in one statement, which gets B and
# then waits for A. Citus's deadlock detection cancels the younger transaction: the purge.
my ($marker_a) = grep { marker_node($cluster, $_) eq 'worker2' } map { "deadlock-$_" } 1 .. 20;
my ($marker_b) = grep { marker_node($cluster, $_) eq 'worker1' } map { "deadlock-$_" } 1 .. 20;
insert_markers($coordinator, 'deadlock', 20, '1 hour');
my $touch = q{UPDATE inbox.markers SET time_offset = time_offset
    WHERE message_key = inbox.message_key('%s')};
my $client = $coordinator->background_psql('postgres', on_error_stop => 0);
my $client_gpid = $client->query_safe('SELECT citus_backend_gpid()');
$client->query_safe('BEGIN');
$client->query_safe(sprintf($touch, $marker_a));
my $log_offset = -s $coordinator->logfile;
set_purge_worker($coordinator, 'on');
ok( $coordinator->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM citus_lock_waits WHERE blocking_gpid = $client_gpid"),
	'the purge worker waits for the client\'s marker A');
$client->query(sprintf($touch, $marker_b));
is($client->{stderr}, '', 'the client gets marker B once the purge is cancelled');
$client->query_safe('COMMIT');
$client->quit;
$coordinator->wait_for_log(
	qr/ERROR:  canceling the transaction since it was involved in a distributed deadlock/,
	$log_offset);
pass('Citus cancelled the purge worker for a distributed deadlock');
ok( $coordinator->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'deadlock'}),
	'the next purge worker deletes the markers');
is( $coordinator->safe_psql('postgres',
		q{SELECT last_error FROM inbox.workers WHERE database = 'postgres'}),
	'canceling the transaction since it was involved in a distributed deadlock',
	'inbox.workers.last_error names the deadlock, as the log does');

# Every node preloads the library and runs purge workers: the worker nodes' leave the database
# to the coordinator's.
set_purge_worker($_, 'on') for @workers;
insert_markers($coordinator, 'everywhere', 2000, '1 hour');
ok( $coordinator->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'everywhere'}),
	'the coordinator\'s purge worker deletes the expired markers');
is( join(' ', map { $_->safe_psql('postgres',
	q{SELECT count(*) FROM inbox.workers WHERE database = 'postgres'}) } @{ $cluster->{nodes} }),
	'1 0 0', 'only the coordinator\'s purge worker serves the database');
is( $coordinator->safe_psql('postgres',
		q{SELECT total_deleted FROM inbox.workers WHERE database = 'postgres'}),
	'2020', 'it deleted every marker, each once');
is( psql_error($workers[0], 'CALL inbox.purge()'),
	'55000: the markers of this database are distributed with Citus and purged by its '
	  . 'coordinator',
	'CALL inbox.purge() on a worker node says where the purge runs');
set_purge_worker($_, 'off') for @{ $cluster->{nodes} };

# CALL inbox.purge() in three sessions of the coordinator at once, twice over: they take turns
# (the purge lock), none fails, and every marker is reported deleted once.
my @sessions = map { $coordinator->background_psql('postgres', on_error_stop => 0) } 1 .. 3;
$_->query_safe('SET inbox.purge_batch_size = 2000') for @sessions;
my ($errors, $deleted, $expected) = ('', 0, 0);
for my $round (1 .. 2)
{
	insert_markers($coordinator, "round$round-$_", 2000, '1 hour') for 1 .. 5;
	$expected += 10000;
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
is($errors, '', 'no purge failed');
is($deleted, $expected, 'the purges reported every deleted marker once');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.markers'), '0',
	'every expired marker is gone');

# While a purge is in progress on the coordinator (a transaction that called inbox.purge() and
# has not committed), no purge worker deletes anything.
my $purging = $coordinator->background_psql('postgres');
$purging->query_safe('BEGIN');
$purging->query_safe('CALL inbox.purge()');
insert_markers($coordinator, 'while-purging', 300, '1 hour');
my $total_deleted = q{SELECT coalesce(sum(total_deleted), 0) FROM inbox.workers
    WHERE database = 'postgres'};
my $deleted_before = $coordinator->safe_psql('postgres', $total_deleted);
my $since = $coordinator->safe_psql('postgres', 'SELECT clock_timestamp()');
set_purge_worker($_, 'on') for @{ $cluster->{nodes} };
ok( $coordinator->poll_query_until('postgres',
		"SELECT blocked_since > '$since' FROM inbox.workers WHERE database = 'postgres'"),
	'the coordinator\'s purge worker gives way to the purge in progress');
is(marker_count($coordinator, 'postgres', 'while-purging'), '300',
	'no other purge ran beside the one in progress');
is($coordinator->safe_psql('postgres', $total_deleted), $deleted_before,
	'the purge worker deleted nothing meanwhile');
$purging->query_safe('COMMIT');
$purging->quit;
ok($coordinator->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.markers'),
	'after the purge in progress commits, the purge worker purges');

$_->stop for @{ $cluster->{nodes} };
done_testing();
