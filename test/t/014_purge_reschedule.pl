# A reload that lowers inbox.purge_interval applies from the reload: a database that was due
# under the old interval (a day here) is purged within the new one, and so is a database that
# got the extension after its last check. A database with an interval of its own keeps it when
# the server-wide value changes, even one that was equal to its own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('reschedule', <<'EOF_CONF');
inbox.retention = '1min'
inbox.purge_interval = '1d'
EOF_CONF

$node->safe_psql('postgres', 'CREATE DATABASE served');
$node->safe_psql('postgres', 'CREATE DATABASE later');
$node->safe_psql('served', 'CREATE EXTENSION inbox');
# A restart makes the launcher check both databases at once, then not for a day.
$node->restart;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inbox purge worker'")
	  && $node->poll_query_until('served',
		"SELECT last_cycle_end IS NOT NULL FROM inbox.workers WHERE database = 'served'"),
	'the first cycle ran after the start');

add_markers($node, 'served', 'old', 100, '1 hour');
$node->safe_psql('later', 'CREATE EXTENSION inbox');
add_markers($node, 'later', 'old', 100, '1 hour');
sleep(2);
is(marker_count($node, 'served', 'old'), 100, 'with a day between cycles nothing is purged yet');

$node->safe_psql('postgres', "ALTER SYSTEM SET inbox.purge_interval = '1s'");
$node->reload;
ok($node->poll_query_until('served', "SELECT count(*) = 0 FROM inbox.messages", 't'),
	'after the reload, the database due under the old interval is purged');
ok($node->poll_query_until('later', "SELECT count(*) = 0 FROM inbox.messages", 't'),
	'and so is the one that got the extension after its last check');

$node->safe_psql('postgres', 'CREATE DATABASE own');
$node->safe_psql('postgres', "ALTER DATABASE own SET inbox.purge_interval = '1s'");
$node->safe_psql('own', 'CREATE EXTENSION inbox');
ok($node->poll_query_until('own', "SELECT last_cycle_end IS NOT NULL FROM inbox.workers WHERE database = 'own'"),
	'a database whose own interval equals the server-wide one is purged');
$node->safe_psql('postgres', "ALTER SYSTEM SET inbox.purge_interval = '1d'");
$node->reload;
add_markers($node, 'own', 'old', 100, '1 hour');
ok($node->poll_query_until('own', "SELECT count(*) = 0 FROM inbox.messages", 't'),
	'and keeps its own interval when the server-wide one becomes a day');

$node->stop;
done_testing();
