# inbox.schedule_purge() on clusters set up as Debian's pg_createcluster sets them up (pg_hba:
# peer authentication on the Unix socket, a password over TCP), following the pg_cron
# recipe: pg_cron connects through the socket (cron.host), or runs its jobs in background
# workers (cron.use_background_workers) for a role that has no operating-system user.
# pg_cron 1.4 schedules by the minute: this test waits for the next minute to begin. The markers'
# ages are a day away from the retention on either side, so that no delay before the first run
# (a minute and more on a loaded machine) changes which of them expire.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

require_extension('pg_cron', 'cron');

my $debian_hba = <<'EOF_HBA';
local   all             all                                     peer
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
EOF_HBA

sub cron_node
{
	my ($name, $settings) = @_;
	my $node = inbox_node(
		$name,
		"cron.database_name = 'postgres'\ninbox.retention = '1d'\n"
		  . "inbox.purge_worker = off\n$settings",
		preload => 'pg_cron,inbox');
	open my $hba, '>', $node->data_dir . '/pg_hba.conf' or die $!;
	print $hba $debian_hba;
	close $hba;
	$node->reload;
	$node->safe_psql('postgres', 'CREATE EXTENSION pg_cron; CREATE EXTENSION inbox');
	add_markers($node, 'postgres', 'old', 500, '2 days');
	add_markers($node, 'postgres', 'fresh', 10, '0 s');
	return $node;
}

# Scheduled before cron.host points at the socket, the job keeps pg_cron's default host.
my $socket = cron_node('socket', '');
my $stale = $socket->safe_psql('postgres', 'SELECT inbox.schedule_purge()');
like($stale, qr/^\d+$/, 'schedule_purge returns the job id');
is( $socket->safe_psql('postgres', 'SELECT jobname, schedule, command, nodename FROM cron.job'),
	'inbox-purge|0 3 * * *|CALL inbox.purge()|localhost',
	'daily at 03:00 by default; pg_cron would connect over TCP to localhost, where Debian wants a password');

# The recipe of docs/operations.md: cron.host names the socket directory; scheduling again moves the job.
$socket->append_conf('postgresql.conf', "cron.host = '" . $socket->host . "'");
$socket->restart;
my $job = $socket->safe_psql('postgres', "SELECT inbox.schedule_purge('* * * * *')");
isnt($job, $stale, 'scheduling again after cron.host changed replaces the job');
is( $socket->safe_psql('postgres', 'SELECT nodename, nodeport, schedule FROM cron.job'),
	$socket->host . '|' . $socket->port . '|* * * * *',
	'one job, connecting where the server listens now');
is($socket->safe_psql('postgres', "SELECT inbox.schedule_purge('* * * * *')"),
	$job, 'scheduling again with nothing changed keeps the job');
is( $socket->safe_psql('postgres', 'SELECT schedule FROM cron.job WHERE jobid = ' . $job),
	'* * * * *', 'and its schedule');

# A role without an operating-system user: peer authentication would refuse its connection,
# so its jobs run in background workers.
my $workers = cron_node('workers', "cron.use_background_workers = on\n");
$workers->safe_psql(
	'postgres', q{
	CREATE ROLE ops LOGIN;
	GRANT USAGE ON SCHEMA cron, inbox TO ops;
	GRANT EXECUTE ON FUNCTION inbox.schedule_purge(text) TO ops;
	GRANT EXECUTE ON PROCEDURE inbox.purge(bigint) TO ops;
});
# 'operate' access grants EXECUTE on schedule_purge, not USAGE on pg_cron's schema: without it,
# a clear refusal that names the grant, and no job.
$workers->safe_psql('postgres',
	"CREATE ROLE operator LOGIN; SELECT inbox.grant_access('operator', 'operate')");
my ($denied, $denied_out, $denied_err) = $workers->psql('postgres',
	"SET ROLE operator; SELECT inbox.schedule_purge('* * * * *')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($denied_err,
	qr/42501: role "operator" may not use pg_cron's schema "cron".*\n.*HINT:.*GRANT USAGE ON SCHEMA cron TO operator/,
	'an operator without USAGE on pg_cron\'s schema is told the grant it needs');
is($workers->safe_psql('postgres', "SELECT count(*) FROM cron.job"), '0', 'and no job is made');
my $ops_job = $workers->safe_psql('postgres',
	"SET ROLE ops; SELECT inbox.schedule_purge('* * * * *')");
is($workers->safe_psql('postgres', "SELECT username FROM cron.job WHERE jobid = $ops_job"),
	'ops', 'the job runs as the role that scheduled it');

for my $case ([ $socket, $job, 'through the socket' ], [ $workers, $ops_job, 'in a background worker' ])
{
	my ($node, $id, $how) = @$case;
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'old'"),
		"pg_cron runs the purge $how: the expired markers go");
	is(marker_count($node, 'postgres', 'fresh'), 10, "$how: the fresh ones stay");
	ok( $node->poll_query_until('postgres',
			"SELECT status = 'succeeded' FROM cron.job_run_details WHERE jobid = $id "
			  . 'ORDER BY runid LIMIT 1'),
		"$how: pg_cron records the run as succeeded");
	# pg_cron records "1 row" (or "CALL"): the count is in the server log.
	ok( $node->wait_for_log(
			qr/CALL inbox.purge\(\) run by pg_cron of database "postgres" deleted 500 expired markers in 1 batch in \d+ ms \(finished\)/
		),
		"$how: the job logs how many markers it deleted");
}

is($socket->safe_psql('postgres', 'SELECT inbox.unschedule_purge()'), 't', 'unschedule_purge removes it');
is($socket->safe_psql('postgres', 'SELECT count(*) FROM cron.job'), '0', 'no job left');
is($socket->safe_psql('postgres', 'SELECT inbox.unschedule_purge()'), 'f', 'and then finds none');

# In a database without pg_cron: a clear error.
$socket->safe_psql('postgres', 'CREATE DATABASE other');
$socket->safe_psql('other', 'CREATE EXTENSION inbox');
my ($rc, $out, $err) = $socket->psql('other', 'SELECT inbox.schedule_purge()');
like($err, qr/pg_cron is not installed in this database.*\n.*HINT:.*CREATE EXTENSION pg_cron/,
	'elsewhere schedule_purge says what is missing');

$socket->stop;
$workers->stop;
done_testing();
