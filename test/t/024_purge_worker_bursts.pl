# A burst far larger than what one purge worker deletes in its run (a worker stops after about a
# second): each run reads only about what it deletes, 16 batches of rows at a time, instead of
# all that is left of the burst. Counted in the statistics: the markers' rows read through an
# index (the deletes go by ctid, which no index counts), against the markers deleted and the
# runs that opened the burst (pg_stat_statements: each asks once whether its markers keep
# details).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

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

$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = on; SELECT pg_reload_conf()');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 10 FROM inbox.messages'),
	'the purge workers delete the burst, and only the expired markers');
$node->safe_psql('postgres', 'ALTER SYSTEM SET inbox.purge_worker = off; SELECT pg_reload_conf()');

my $runs = $node->safe_psql('postgres',
	q{SELECT sum(calls) FROM pg_stat_statements WHERE query LIKE 'SELECT % FROM inbox.marker_details %'});
my $rows_read = $node->safe_psql('postgres', $rows_fetched) - $fetched_before;
cmp_ok($runs, '>', 1, "the burst took several runs ($runs)");
# Besides its reads of the burst, a run reads up to a batch and one more entries of the
# retention index (where the burst's bucket ends), on pages that the deletes left not
# all-visible.
cmp_ok($rows_read, '<=', $burst + $runs * ($rows_per_read + $batch_size + 1),
	"each run read at most $rows_per_read rows it did not delete ($rows_read rows read)");

$node->stop;
done_testing();
