# The purge workers: found without configuration, purge in batches what the retention says,
# leave fresh markers and other databases alone, follow per-database settings and reloads, and
# yield to another purge.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('workers', <<'EOF_CONF');
inbox.retention = '1min'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = 100
EOF_CONF

is( $node->safe_psql('postgres',
		"SELECT application_name FROM pg_stat_activity WHERE backend_type = 'inbox purge launcher'"),
	'inbox purge launcher',
	'the launcher shows itself in pg_stat_activity');

# alpha and beta have the extension; gamma has a look-alike table but no extension; delta keeps
# markers for a day.
for my $db (qw(alpha beta gamma delta))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
$node->safe_psql($_, 'CREATE EXTENSION inbox') for qw(alpha beta delta);
$node->safe_psql('postgres', "ALTER DATABASE delta SET inbox.retention = '1d'");
$node->safe_psql('gamma',
	'CREATE SCHEMA inbox; CREATE TABLE inbox.messages (consumer text, message_id text, '
	  . 'processed_at timestamptz, PRIMARY KEY (consumer, message_id))');

my $log_offset = -s $node->logfile;
for my $db (qw(alpha beta gamma delta))
{
	add_markers($node, $db, 'fresh', 10, '0 s');
	add_markers($node, $db, 'old', 1000, '1 hour');
}

for my $db (qw(alpha beta))
{
	ok($node->poll_query_until($db, "SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'old'"),
		"$db: expired markers are purged");
}
$node->wait_for_log(
	qr/inbox purge worker of database "alpha" deleted 1000 expired markers in 10 batches/,
	$log_offset);
pass('alpha: purged in batches of inbox.purge_batch_size, logged');

ok(wait_for_next_cycle($node, 'alpha', $_), "$_: another whole cycle ran") for qw(alpha delta);
is(marker_count($node, $_, 'fresh'), 10, "$_: fresh markers stay") for qw(alpha beta);
is(marker_count($node, 'gamma', 'old'), 1000, 'gamma, without the extension, is left alone');
is(marker_count($node, 'delta', 'old'), 1000,
	'delta keeps its markers: ALTER DATABASE ... SET inbox.retention applies to its worker');

is( $node->safe_psql('alpha',
		"SELECT string_agg(database || ':' || (state IN ('idle', 'purging')) || ':' "
		  . "|| (last_error IS NULL), ' ' ORDER BY database) FROM inbox.workers"),
	'alpha:true:true beta:true:true delta:true:true',
	'inbox.workers: one row per database with the extension');
is($node->safe_psql('alpha',
		"SELECT total_deleted FROM inbox.workers WHERE database = 'alpha'"),
	'1000', 'inbox.workers counts what was deleted');

# Reload: a retention of one second takes the fresh markers too, except in delta, whose own
# setting stays above the configuration file.
$node->append_conf('postgresql.conf', "inbox.retention = '1s'");
$node->reload;
ok($node->poll_query_until('beta', 'SELECT count(*) = 0 FROM inbox.messages'),
	'after SIGHUP the new retention applies');
ok(wait_for_next_cycle($node, 'alpha', 'delta'), 'delta: another whole cycle ran');
is(marker_count($node, 'delta', 'fresh'), 10, 'delta still follows its own retention');

# A purge that holds the database's purge lock (here a CALL inbox.purge() in an open
# transaction, with a retention that deletes nothing) makes the worker give way: inbox.workers
# shows since when, and no cycle completes while the lock is held. Once it is gone, the cycle
# completes and purges.
my $since = $node->safe_psql('alpha', 'SELECT clock_timestamp()');
my $holder = $node->background_psql('alpha');
$holder->query_safe("SET inbox.retention = '3650d'");
$holder->query_safe('BEGIN');
$holder->query_safe('CALL inbox.purge()');
add_markers($node, 'alpha', 'held', 50, '1 hour');
ok( $node->poll_query_until('alpha',
		"SELECT blocked_since > '$since' FROM inbox.workers WHERE database = 'alpha'"),
	'alpha: the worker gives way to the purge lock, and shows since when');
# five more intervals, each giving way
sleep(1);
is( $node->safe_psql('alpha',
		"SELECT last_cycle_end < blocked_since FROM inbox.workers WHERE database = 'alpha'"),
	't', 'a cycle that gave way is no complete cycle');
is(marker_count($node, 'alpha', 'held'), 50, 'the worker yields to another purge');
$holder->query_safe('COMMIT');
ok($node->poll_query_until('alpha', "SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'held'"),
	'and purges when its turn comes');
ok( $node->poll_query_until('alpha',
		"SELECT blocked_since IS NULL AND last_cycle_end > '$since' FROM inbox.workers "
		  . "WHERE database = 'alpha'"),
	'then the cycle completes, blocked no more');
$holder->quit;

# inbox.purge_log_level = debug1 (here for beta alone) keeps its cycles out of the log.
$node->safe_psql('postgres', 'ALTER DATABASE beta SET inbox.purge_log_level = debug1');
$log_offset = -s $node->logfile;
add_markers($node, $_, 'quiet', 30, '1 hour') for qw(alpha beta);
ok($node->poll_query_until('beta', "SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'quiet'"),
	'beta purges at inbox.purge_log_level = debug1');
$node->wait_for_log(qr/inbox purge worker of database "alpha" deleted \d+ expired markers/,
	$log_offset);
unlike(slurp_file($node->logfile, $log_offset), qr/database "beta" deleted/,
	'but logs its cycle only at DEBUG1, while alpha logs at LOG');

# inbox.purge_worker = off stops the purging; on starts it again.
$node->append_conf('postgresql.conf', 'inbox.purge_worker = off');
$node->reload;
# the launcher stops starting workers; one that is running finishes its cycle
sleep(1);
add_markers($node, 'beta', 'paused', 20, '1 hour');
sleep(1);
is(marker_count($node, 'beta', 'paused'), 20, 'inbox.purge_worker = off: no purge');
$node->append_conf('postgresql.conf', 'inbox.purge_worker = on');
$node->reload;
ok($node->poll_query_until('beta', "SELECT count(*) = 0 FROM inbox.messages WHERE consumer = 'paused'"),
	'inbox.purge_worker = on: purging again');

$node->stop;
done_testing();
