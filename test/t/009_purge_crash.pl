# A purge worker or the launcher killed with kill -9: PostgreSQL resets the cluster (as it must
# after any process with shared memory dies that way), comes back for every other session, and
# the launcher is restarted and purges on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('crash', <<'EOF_CONF');
inbox.retention = '1s'
inbox.purge_interval = '100ms'
inbox.purge_batch_size = 200
restart_after_crash = on
EOF_CONF
$node->safe_psql('postgres', 'CREATE EXTENSION inbox');

sub process_of
{
	my ($type) = @_;
	my $pid;
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = '$type' AND state = 'active'")
	  if $type eq 'inbox purge worker';
	$pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = '$type' ORDER BY pid LIMIT 1");
	return $pid;
}

# After the reset, the cluster serves sessions, a new launcher runs and purging goes on.
sub recovers
{
	my ($what, $launcher_before) = @_;
	ok($node->poll_query_until('postgres', 'SELECT 1', '1'), "$what: sessions are served again");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inbox purge launcher' "
			  . "AND pid <> $launcher_before"),
		"$what: the launcher runs again");
	add_markers($node, 'postgres', 'after', 100, '1 hour');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'after'"),
		"$what: purging goes on");
}

# A worker in the middle of a long purge. Each worker purges for about a second and leaves the
# rest to a successor: the one pg_stat_activity names may have left before the signal reaches
# it (on a loaded machine a second passes quickly), and then its successor is the one killed.
add_markers($node, 'postgres', 'backlog', 100000, '1 hour');
my $launcher = process_of('inbox purge launcher');
my $worker;
foreach my $attempt (1 .. 30)
{
	$worker = process_of('inbox purge worker');
	last if $worker =~ /^\d+$/ && deliberately_kill($worker, may_have_exited => 1);
	undef $worker;
}
like($worker, qr/^\d+$/, 'a purge worker at work is killed');
recovers('worker killed', $launcher);
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.messages'),
	'the backlog is purged in the end');

# The launcher.
$launcher = process_of('inbox purge launcher');
like($launcher, qr/^\d+$/, 'the launcher runs');
deliberately_kill($launcher);
recovers('launcher killed', $launcher);

$node->stop;
done_testing();
