# inbox.schedule_purge(): pg_cron runs CALL inbox.purge() on schedule and the markers go.
# pg_cron 1.4 schedules by the minute: this test waits for the next minute to begin.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node(
	'cron',
	sub {
		my $socket_dir = shift->host;
		return <<"EOF_CONF";
cron.database_name = 'postgres'
cron.host = '$socket_dir'
inbox.retention = '1min'
inbox.purge_worker = off
EOF_CONF
	},
	preload => 'pg_cron,inbox');
$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron; CREATE EXTENSION inbox');

add_markers($node, 'postgres', 'old', 500, '1 hour');
add_markers($node, 'postgres', 'fresh', 10, '0 s');

my $job = $node->safe_psql('postgres', 'SELECT inbox.schedule_purge()');
like($job, qr/^\d+$/, 'schedule_purge returns the job id');
is( $node->safe_psql('postgres', "SELECT jobname, schedule, command FROM cron.job WHERE jobid = $job"),
	"inbox-purge|0 3 * * *|CALL inbox.purge()",
	'by default the purge runs daily at 03:00');
is($node->safe_psql('postgres', "SELECT inbox.schedule_purge('* * * * *')"),
	$job, 'scheduling again keeps the job and changes its schedule');
is($node->safe_psql('postgres', 'SELECT schedule FROM cron.job'), '* * * * *', 'one job');

ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'old'"),
	'pg_cron runs the purge: the expired markers go');
is(marker_count($node, 'postgres', 'fresh'), 10, 'the fresh ones stay');
ok( $node->poll_query_until('postgres',
		"SELECT status = 'succeeded' FROM cron.job_run_details WHERE jobid = $job "
		  . 'ORDER BY runid LIMIT 1'),
	'pg_cron records the run as succeeded');

is($node->safe_psql('postgres', 'SELECT inbox.unschedule_purge()'), 't', 'unschedule_purge removes it');
is($node->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '0', 'no job left');
is($node->safe_psql('postgres', 'SELECT inbox.unschedule_purge()'), 'f', 'and then finds none');

# In a database without pg_cron: a clear error.
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION inbox');
my ($rc, $out, $err) = $node->psql('other', 'SELECT inbox.schedule_purge()');
like($err, qr/pg_cron is not installed in this database.*\n.*HINT:.*CREATE EXTENSION pg_cron/,
	'elsewhere schedule_purge says what is missing');

$node->stop;
done_testing();
