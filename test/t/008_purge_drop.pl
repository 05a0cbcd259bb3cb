# The purge workers never block DROP DATABASE, DROP EXTENSION or a shutdown, even in the middle
# of a long purge, and notice new databases and a CREATE EXTENSION without configuration.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use InboxTest;

my $node = inbox_node('drop', <<'EOF_CONF');
inbox.retention = '1s'
inbox.purge_interval = '100ms'
inbox.purge_batch_size = 200
EOF_CONF

$node->safe_psql('postgres', 'CREATE EXTENSION inbox');

# A database with a backlog that takes its workers several seconds.
sub busy_database
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION inbox');
	add_markers($node, $db, 'backlog', 100000, '1 hour');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'inbox purge worker' "
			  . "AND datname = '$db' AND state = 'active'"),
		"$db: a worker is purging");
	ok( $node->poll_query_until('postgres',
			"SELECT pid IS NOT NULL AND state = 'purging' FROM inbox.workers WHERE database = '$db'"),
		"$db: inbox.workers shows it purging");
}

sub timed
{
	my ($what, $sql, $db) = @_;
	my $start = time();
	my ($rc, $stdout, $stderr) = $node->psql($db, $sql);
	my $seconds = time() - $start;
	is($rc, 0, "$what succeeds") or diag($stderr);
	cmp_ok($seconds, '<', 5, "$what takes less than DROP DATABASE's wait for other sessions");
}

busy_database('doomed');
timed('DROP DATABASE during a purge', 'DROP DATABASE doomed', 'postgres');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM inbox.workers WHERE database IS NULL OR database = 'doomed'"),
	'the dropped database leaves inbox.workers');

busy_database('changing');
# (With markers left, DROP EXTENSION needs to be told it may delete them.)
timed('DROP EXTENSION during a purge',
	'SET inbox.allow_drop_with_markers = on; DROP EXTENSION inbox', 'changing');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM inbox.workers WHERE database = 'changing'"),
	'the database without the extension leaves inbox.workers');

# CREATE EXTENSION again: noticed without configuration.
$node->safe_psql('changing', 'CREATE EXTENSION inbox');
add_markers($node, 'changing', 'again', 100, '1 hour');
ok($node->poll_query_until('changing', 'SELECT count(*) = 0 FROM inbox.messages'),
	'CREATE EXTENSION is noticed: purged again');

# The one failure allowed: a worker started for the database just before DROP DATABASE
# committed finds it gone when it connects.
my @failures = grep { !/FATAL:  database \d+ does not exist/ }
  grep { /ERROR|FATAL/ } split /\n/, slurp_file($node->logfile);
is_deeply(\@failures, [], 'no purge worker failed on the way');

# Shutdown in the middle of a purge is prompt: the worker ends at SIGTERM, between two rows.
busy_database('stopping');
my $start = time();
$node->stop('fast');
cmp_ok(time() - $start, '<', 5, 'a fast shutdown during a purge takes seconds at most');

done_testing();
