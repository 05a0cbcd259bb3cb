# A burst far larger than what one purge worker deletes in its run (a worker stops after about a
# second): each run reads only about what it deletes, 16 batches of rows at a time, instead of
# all that is left of the burst. Counted in the statistics: the markers' rows read through an
# index (the deletes go by ctid, which no index counts), against the markers deleted and the
# runs (pg_stat_statements: each begins its walk with the registry's first consumer).
#
# And a burst that a worker has time to delete whole: its run goes on reading the rows 16
# batches at a time until the burst is gone, rather than taking one read for the whole bucket
# and leaving the rest to the next cycle.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;
use Time::HiRes qw(usleep);

my $batch_size = 100;
my $rows_per_read = 16 * $batch_size;
my $burst = 30000;

my $node = inbox_node('worker_bursts', <<"EOF_CONF", preload => 'inbox,pg_stat_statements');
inbox.retention = '1min'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = $batch_size
inbox.purge_worker = off
pg_stat_statements.track = 'all'
EOF_CONF
$node->safe_psql('postgres', 'CREATE EXTENSION inbox; CREATE EXTENSION pg_stat_statements');

# One consumer, $burst markers in one second an hour ago, and a few kept.
add_markers($node, 'postgres', 'burst', $burst, '1 hour');
add_markers($node, 'postgres', 'burst', 10, '0 s');
my $rows_fetched = q{SELECT idx_tup_fetch FROM pg_stat_user_tables
    WHERE relid = 'inbox.markers'::regclass};
my $fetched_before = $node->safe_psql('postgres', $rows_fetched);
$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');

# The runs are counted as the burst is found gone: the workers go on running (and finding
# nothing) until they are turned off.
my $done_and_runs = q{SELECT count(*) = 10,
    (SELECT sum(calls) FROM pg_stat_statements
     WHERE query LIKE 'SELECT id, retention FROM inbox.consumer_registry ORDER BY id %')
    FROM inbox.messages};
$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = on; SELECT pg_reload_conf()');
my ($done, $runs) = ('f', 0);
for (my $waited = 0; $waited < $PostgreSQL::Test::Utils::timeout_default * 20; $waited++)
{
	($done, $runs) = split /\|/, $node->safe_psql('postgres', $done_and_runs);
	last if $done eq 't';
	usleep(50_000);
}
is($done, 't', 'the purge workers delete the burst, and only the expired markers');
$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = off; SELECT pg_reload_conf()');

my $rows_read = $node->safe_psql('postgres', $rows_fetched) - $fetched_before;
cmp_ok($runs, '>', 1, "the burst took several runs ($runs)");
# Besides its reads of the burst, a run reads up to a batch and one more entries of the
# retention index (where the burst's bucket ends), on pages that the deletes left not
# all-visible.
cmp_ok($rows_read, '<=', $burst + $runs * ($rows_per_read + $batch_size + 1),
	"each run read at most $rows_per_read rows it did not delete ($rows_read rows read)");

# Batches of 10: a burst of 400 markers is 40 batches, which one worker does in well under its
# second (and, out of time, its successor goes on with the same cycle). The cycle that finds it
# deletes it whole. (In a database of its own, whose cycles alone the log names.)
$node->safe_psql('postgres', 'CREATE DATABASE replay');
$node->safe_psql('replay', 'CREATE EXTENSION inbox');
$node->safe_psql('postgres',
	'ALTER SYSTEM SET inbox.purge_batch_size = 10; SELECT pg_reload_conf()');
add_markers($node, 'replay', 'replay', 400, '1 hour');
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = on; SELECT pg_reload_conf()');
$node->wait_for_log(qr/inbox purge worker of database "replay" deleted \d+ expired markers/,
	$log_offset);
$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = off; SELECT pg_reload_conf()');
my ($deleted, $batches) = slurp_file($node->logfile, $log_offset) =~
  /inbox purge worker of database "replay" deleted (\d+) expired markers in (\d+) batches/;
is("$deleted in $batches", '400 in 40',
	'a burst of 40 batches goes in one cycle, read 16 batches at a time');
is(marker_count($node, 'replay', 'replay'), 0, 'and is gone');

$node->stop;
done_testing();
