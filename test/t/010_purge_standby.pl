# On a streaming standby the workers do not purge (they report "standby"); after promotion they
# purge with the standby's own settings. A standby whose worker slots are all taken says nothing
# about it (its workers have nothing to do before promotion); once promoted, it warns until a
# slot is free, then purges.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

# The pid of the node's child process whose title shows $title. (pg_prewarm's leader connects
# to no database: pg_stat_activity does not show it.)
sub child_process
{
	my ($node, $title) = @_;
	for my $process (glob('/proc/[0-9]*'))
	{
		open(my $stat, '<', "$process/stat") or next;
		my ($pid, $parent) = <$stat> =~ /^(\d+) \(.*\) \S+ (\d+)/ or next;
		next unless $parent == $node->{_pid};
		open(my $cmdline, '<', "$process/cmdline") or next;
		return $pid if <$cmdline> =~ /\Q$title\E/;
	}
	return 0;
}

# Three max_worker_processes slots: the logical replication launcher, the purge launcher and
# one purge worker. A standby needs at least as many as its primary.
my $primary = inbox_node('primary', <<'EOF_CONF', allows_streaming => 1);
inbox.retention = '1d'
inbox.purge_interval = '100ms'
max_worker_processes = 3
EOF_CONF
$primary->safe_psql('postgres', 'CREATE EXTENSION inbox');
add_markers($primary, 'postgres', 'old', 500, '1 hour');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "inbox.retention = '1s'");
$standby->start;
# The crowded standby's third slot is taken by pg_prewarm's leader, as the slots of a standby
# are by workers that wait for the end of recovery. It logs the launcher's attempts at DEBUG1.
my $crowded = PostgreSQL::Test::Cluster->new('crowded');
$crowded->init_from_backup($primary, 'backup', has_streaming => 1);
$crowded->append_conf('postgresql.conf', <<'EOF_CONF');
inbox.retention = '1s'
shared_preload_libraries = 'inbox,pg_prewarm'
log_min_messages = debug1
EOF_CONF
$crowded->start;
$primary->wait_for_catchup($_) for ($standby, $crowded);

ok( $standby->poll_query_until('postgres',
		"SELECT state = 'standby' FROM inbox.workers WHERE database = 'postgres'"),
	'the worker on the standby reports "standby"');
# Give the standby's workers ten rounds.
sleep(1);
add_markers($primary, 'postgres', 'later', 10, '1 hour');
$primary->wait_for_catchup($_) for ($standby, $crowded);
is(marker_count($standby, 'postgres', 'old'), 500, 'the standby runs no purge');
unlike(slurp_file($standby->logfile), qr/ERROR|FATAL/, 'and tries none');

# Five rounds of the crowded standby's launcher, each without a slot.
my $no_slot = 'could not start a purge worker';
ok( $crowded->poll_query_until(
		'postgres',
		"SELECT count(*) >= 5 FROM regexp_matches(pg_read_file('"
		  . $crowded->logfile
		  . "'), '$no_slot', 'g')"),
	'the crowded standby finds no slot for its workers');
unlike(slurp_file($crowded->logfile),
	qr/WARNING:.*$no_slot|Raise max_worker_processes/, 'and does not warn of it');
is(marker_count($crowded, 'postgres', 'old'), 500, 'the crowded standby runs no purge either');

$primary->stop;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.messages'),
	'after promotion the workers purge');
ok( $standby->poll_query_until('postgres',
		"SELECT state IN ('idle', 'purging') AND total_deleted = 510 FROM inbox.workers "
		  . "WHERE database = 'postgres'"),
	'inbox.workers shows them at work');

# Promoted, the crowded server needs its slot: the launcher warns, and purges once one is free.
my $log_offset = -s $crowded->logfile;
$crowded->promote;
ok($crowded->wait_for_log(qr/WARNING:  inbox purge launcher $no_slot\n.*HINT:  Raise max_worker_processes/,
		$log_offset),
	'promoted, the crowded server warns that it finds no slot');
kill 'TERM', child_process($crowded, 'autoprewarm leader') or die "no autoprewarm leader: $!";
ok($crowded->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.messages'),
	'with a slot free, its workers purge');

$standby->stop;
$crowded->stop;
done_testing();
