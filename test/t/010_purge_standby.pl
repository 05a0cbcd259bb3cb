# On a streaming standby the workers do not purge (they report "standby"); after promotion they
# purge with the standby's own settings.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $primary = inbox_node('primary', <<'EOF_CONF', allows_streaming => 1);
inbox.retention = '1d'
inbox.purge_interval = '100ms'
EOF_CONF
$primary->safe_psql('postgres', 'CREATE EXTENSION inbox');
add_markers($primary, 'postgres', 'old', 500, '1 hour');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', "inbox.retention = '1s'");
$standby->start;
$primary->wait_for_catchup($standby);

ok( $standby->poll_query_until('postgres',
		"SELECT state = 'standby' FROM inbox.workers WHERE database = 'postgres'"),
	'the worker on the standby reports "standby"');
# Give the standby's workers ten rounds.
sleep(1);
add_markers($primary, 'postgres', 'later', 10, '1 hour');
$primary->wait_for_catchup($standby);
is(marker_count($standby, 'postgres', 'old'), 500, 'the standby runs no purge');
unlike(slurp_file($standby->logfile), qr/ERROR|FATAL/, 'and tries none');

$primary->stop;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM inbox.messages'),
	'after promotion the workers purge');
ok( $standby->poll_query_until('postgres',
		"SELECT state IN ('idle', 'purging') AND total_deleted = 510 FROM inbox.workers "
		  . "WHERE database = 'postgres'"),
	'inbox.workers shows them at work');

$standby->stop;
done_testing();
