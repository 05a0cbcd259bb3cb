# A purge worker and a burst larger than it can purge in its time budget: it finishes the bucket
# whose keys it read before it stops, so that the next worker does not read them all again. With
# batches of 7 and a pause of at least 10 ms after each, 3000 markers of one second take at least
# 4 s, some 5 workers of a second each: read again by each, the burst's keys would cost more than
# 4 x 3000 tuples of the table and of the retention index; read once, 2 x 3000 of each (the
# keys and the deletes; the keys and the count that chooses how to delete them).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('worker_burst', <<'EOF_CONF');
inbox.retention = '1min'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = 7
inbox.purge_worker = off
autovacuum = off
EOF_CONF
$node->safe_psql('postgres', 'CREATE EXTENSION inbox');
add_markers($node, 'postgres', 'burst', 3000, '1 hour');
$node->safe_psql('postgres', 'VACUUM ANALYZE inbox.markers');

my $reads = q{SELECT t.seq_tup_read + t.idx_tup_fetch, i.idx_tup_read, t.n_tup_del
	FROM pg_stat_user_tables t, pg_stat_user_indexes i
	WHERE t.relid = 'inbox.markers'::regclass
	  AND i.indexrelid = 'inbox.markers_retention'::regclass};
$node->safe_psql('postgres', 'SELECT pg_stat_force_next_flush()');
my ($table_before, $index_before, $deleted_before) = split /\|/,
  $node->safe_psql('postgres', $reads);

$node->append_conf('postgresql.conf', 'inbox.purge_worker = on');
$node->reload;
# The workers' counters reach the statistics when each worker exits.
ok( $node->poll_query_until('postgres',
		"SELECT n_tup_del >= $deleted_before + 3000 FROM pg_stat_user_tables "
		  . "WHERE relid = 'inbox.markers'::regclass"),
	'the purge workers delete the burst');
is(marker_count($node, 'postgres', 'burst'), 0, 'no marker of the burst is left');
my ($table_after, $index_after) = split /\|/, $node->safe_psql('postgres', $reads);
note('tuples read: ' . ($table_after - $table_before) . ' of the table, '
	  . ($index_after - $index_before) . ' of the retention index');
cmp_ok($table_after - $table_before, '<=', 2.5 * 3000,
	'the markers\' table is read twice per marker');
cmp_ok($index_after - $index_before, '<=', 2.5 * 3000,
	'the retention index is read twice per marker');

done_testing();
