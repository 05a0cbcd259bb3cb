# The marker store's life cycle on Citus. Citus's table conversions (alter_distributed_table,
# undistribute_table) refuse an extension's tables; inbox.distribute() changes the shard count
# and the distribution column keeping every marker, and inbox.undistribute() brings the tables
# back to the coordinator. Shards move. Tables distributed only in part are refused. DROP
# EXTENSION is refused while markers exist (unless said so), leaves no shard on any node, and the
# extension created again distributes afresh.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('drop');
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };
my $markers = q{SELECT count(*) FROM inbox.messages};
my $all_duplicates = q{SELECT count(*) FILTER (WHERE inbox.claim('life', 'm-' || g))
    FROM generate_series(1, 100) g};

# Shard tables of the store on each worker, as "markers details registry" per worker.
sub shards_on_workers
{
	return join(' ', map {
		my $worker = $_;
		join('/', map { shard_tables($worker, 'inbox', $_) } qw(markers marker_details
			  consumer_registry))
	} @workers);
}

sub distribution_column
{
	return $coordinator->safe_psql('postgres', q{
		SELECT string_agg(coalesce(column_to_column_name(logicalrelid, partkey), '-'), ' '
		                  ORDER BY logicalrelid::text)
		FROM pg_dist_partition WHERE logicalrelid::text LIKE 'inbox.%'});
}

distribute_inbox($cluster);
$coordinator->safe_psql('postgres',
	q{SELECT inbox.claim('life', 'm-' || g) FROM generate_series(1, 100) g});
$coordinator->safe_psql('postgres', q{
	SELECT inbox.receive('life', 'r-1', '{"amount": 1}');
	SELECT inbox.complete('life', 'r-1', '{"receipt": 1}')});
is(shards_on_workers(), '2/2/1 2/2/1',
	'two shards of the markers and of their details on each worker, the registry on each');

like( psql_error($coordinator, q{SELECT alter_distributed_table('inbox.markers', shard_count := 8)}),
	qr/cannot alter table because an extension depends on it/,
	'alter_distributed_table refuses an extension\'s table');
distribute_inbox($cluster, shard_count => 8);
is( join(' ', map { shard_placements($cluster, $_) } 'inbox.markers', 'inbox.marker_details'),
	'coordinator:0 worker1:4 worker2:4 coordinator:0 worker1:4 worker2:4',
	'inbox.distribute(shard_count := 8): eight shards of each over the workers');
is(shards_on_workers(), '4/4/1 4/4/1', 'and no shard of the old distribution is left');
is($coordinator->safe_psql('postgres', $markers), '101', 'every marker is still there');
is($coordinator->safe_psql('postgres', $all_duplicates), '0', 'and each is a duplicate');
is( $coordinator->safe_psql('postgres',
		q{SELECT (r).result FROM inbox.receive('life', 'r-1', '{"amount": 1}') r}),
	'{"receipt": 1}', 'with the result kept beside it');

# What Citus can do to the tables: move a shard (rebalancing onto a new worker does the same); its
# details, co-located, move with it.
my ($shard, $from) = split /\|/, $coordinator->safe_psql('postgres', q{
    SELECT s.shardid, n.nodeport FROM pg_dist_shard s
    JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n USING (groupid)
    WHERE s.logicalrelid = 'inbox.markers'::regclass AND n.nodeport = }
	  . $workers[0]->port . ' ORDER BY s.shardid LIMIT 1');
$coordinator->safe_psql('postgres',
	sprintf(q{SELECT citus_move_shard_placement(%s, '%s', %d, '%s', %d,
        shard_transfer_mode := 'block_writes')},
		$shard, $workers[0]->host, $from, $workers[1]->host, $workers[1]->port));
$coordinator->safe_psql('postgres', 'CALL citus_cleanup_orphaned_resources()');
is(shards_on_workers(), '3/3/1 5/5/1', 'a shard of the markers moved with its details');
is($coordinator->safe_psql('postgres', $markers), '101', 'with its markers');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE inbox.claim('life', 'm-' || g)) FROM generate_series(1, 101) g}),
	'1', 'after the move every marker is a duplicate, and a new message is processed');

# Another distribution column.
distribute_inbox($cluster, distribution_column => 'consumer_id');
is(distribution_column(), '- consumer_id consumer_id',
	'inbox.distribute(\'consumer_id\'): markers and details by consumer');
is(shards_on_workers(), '2/2/1 2/2/1', 'in the default shard count, none of the old left');
is($coordinator->safe_psql('postgres', $markers), '102', 'every marker is still there');
is($coordinator->safe_psql('postgres', $all_duplicates), '0', 'and each is a duplicate');

like( psql_error($coordinator, q{SELECT undistribute_table('inbox.markers')}),
	qr/cannot alter table because an extension depends on it/,
	'undistribute_table refuses an extension\'s table');
$coordinator->safe_psql('postgres', 'SELECT inbox.undistribute()');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'inbox.%'}),
	'0', 'inbox.undistribute(): no table of the store is a Citus table');
is(shards_on_workers(), '0/0/0 0/0/0', 'no shard is left on the workers');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FROM inbox.markers} ),
	'102', 'the markers are in the coordinator\'s own table');
is($coordinator->safe_psql('postgres', $all_duplicates), '0', 'and each is a duplicate');

# Tables distributed by hand, and not all of them: refused before any marker is written.
$coordinator->safe_psql('postgres',
	q{SELECT create_distributed_table('inbox.markers', 'message_key')});
like( psql_error($coordinator, q{SELECT inbox.claim('life', 'new')}),
	qr/^55000: the tables of inbox are not distributed together/,
	'markers distributed without their details and registry: claims are refused');
$coordinator->safe_psql('postgres', 'SELECT inbox.undistribute()');
distribute_inbox($cluster);
is($coordinator->safe_psql('postgres', q{SELECT inbox.claim('life', 'new')}), 't',
	'distributed together again: claims go on');

like( psql_error($coordinator, 'DROP EXTENSION inbox'),
	qr/^2BP01: dropping extension inbox would delete the markers of 1 consumer/,
	'DROP EXTENSION with markers on the shards is refused, as on one node');
is(shards_on_workers(), '2/2/1 2/2/1', 'and the shards are all there');
$coordinator->safe_psql('postgres',
	'SET inbox.allow_drop_with_markers = on; DROP EXTENSION inbox');
is( join(' ', on_nodes($cluster, q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'})),
	'0 0 0', 'DROP EXTENSION on the coordinator drops the extension on every node');
is( join(' ', on_nodes($cluster,
	q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'inbox.%'})),
	'0 0 0', 'no node\'s Citus metadata knows the tables any more');
is(shards_on_workers(), '0/0/0 0/0/0', 'no shard of them is left on the workers');
# The schema that CREATE EXTENSION made is not a member of the extension: PostgreSQL keeps it,
# and Citus does the same on the workers.
is( join(' ', on_nodes($cluster, q{SELECT count(*) FROM pg_namespace WHERE nspname = 'inbox'})),
	'1 1 1', 'the inbox schema stays on every node, as PostgreSQL keeps it on one');

# Created again with nothing cleaned up by hand, and distributed by consumer this time.
$coordinator->safe_psql('postgres', 'CREATE EXTENSION inbox');
distribute_inbox($cluster, distribution_column => 'consumer_id');
is(shard_placements($cluster, 'inbox.markers'), 'coordinator:0 worker1:2 worker2:2',
	'the extension created again, its markers distributed by consumer');
is($coordinator->safe_psql('postgres', $markers), '0', 'the new marker store is empty');
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(inbox.claim(c, 'm-1')::text, ' ' ORDER BY i)
          FROM unnest(ARRAY['a', 'b', 'c', 'a']) WITH ORDINALITY AS u(c, i)}),
	'true true true false', 'claims by consumer: first copies and a duplicate');

$coordinator->safe_psql('postgres',
	'SET inbox.allow_drop_with_markers = on; DROP SCHEMA inbox CASCADE');
is( join(' ', on_nodes($cluster, q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'})),
	'0 0 0', 'DROP SCHEMA inbox CASCADE drops the extension on every node');
is(shards_on_workers(), '0/0/0 0/0/0', 'and leaves no shard on the workers either');

$_->stop for @{ $cluster->{nodes} };
done_testing();
