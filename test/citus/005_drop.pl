# The marker table's life cycle on Citus: Citus's table conversions (alter_distributed_table,
# undistribute_table) work on it, DROP EXTENSION leaves no shard behind on any node, and the
# extension created again distributes afresh, here by consumer.
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

distribute_table($cluster, 'inbox.messages', 'message_id');
$coordinator->safe_psql('postgres',
	q{SELECT inbox.claim('life', 'm-' || g) FROM generate_series(1, 100) g});
is(join(' ', map { shard_tables($_, 'inbox', 'messages') } @workers), '2 2',
	'two shards of inbox.messages on each worker');

TODO:
{
	local $TODO = 'issue 11 (5): Citus refuses to convert a table that belongs to an extension';
	is( psql_error($coordinator,
			q{SELECT alter_distributed_table('inbox.messages', shard_count := 8)}),
		'', 'alter_distributed_table changes the shard count');
	is(shard_placements($cluster, 'inbox.messages'), 'coordinator:0 worker1:4 worker2:4',
		'eight shards over the workers');
}
is($coordinator->safe_psql('postgres', $markers), '100', 'every marker is still there');

# What Citus can do to the table: move a shard (rebalancing onto a new worker does the same).
my ($shard, $from) = split /\|/, $coordinator->safe_psql('postgres', q{
    SELECT s.shardid, n.nodeport FROM pg_dist_shard s
    JOIN pg_dist_placement p USING (shardid) JOIN pg_dist_node n USING (groupid)
    WHERE s.logicalrelid = 'inbox.messages'::regclass AND n.nodeport = }
	  . $workers[0]->port . ' ORDER BY s.shardid LIMIT 1');
$coordinator->safe_psql('postgres',
	sprintf(q{SELECT citus_move_shard_placement(%s, '%s', %d, '%s', %d,
        shard_transfer_mode := 'block_writes')},
		$shard, $workers[0]->host, $from, $workers[1]->host, $workers[1]->port));
$coordinator->safe_psql('postgres', 'CALL citus_cleanup_orphaned_resources()');
is(shard_placements($cluster, 'inbox.messages'), 'coordinator:0 worker1:1 worker2:3',
	'a shard of inbox.messages moved to the other worker');
is(join(' ', map { shard_tables($_, 'inbox', 'messages') } @workers), '1 3',
	'and the source shard is gone');
is($coordinator->safe_psql('postgres', $markers), '100', 'with its markers');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE inbox.claim('life', 'm-' || g)) FROM generate_series(1, 101) g}),
	'1', 'after the move every marker is a duplicate, and a new message is processed');

$coordinator->safe_psql('postgres', 'DROP EXTENSION inbox');
is( join(' ', on_nodes($cluster, q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'})),
	'0 0 0', 'DROP EXTENSION on the coordinator drops the extension on every node');
is( join(' ', on_nodes($cluster,
	q{SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'inbox.%'})),
	'0 0 0', 'no node\'s Citus metadata knows the marker table any more');
TODO:
{
	local $TODO =
	  'issue 11 (5): Citus drops an extension\'s distributed table as if it were a partition';
	is(join(' ', map { shard_tables($_, 'inbox', 'messages') } @workers), '0 0',
		'no shard of the marker table is left on the workers');
}
# The schema that CREATE EXTENSION made is not a member of the extension: PostgreSQL keeps it,
# and Citus does the same on the workers.
is( join(' ', on_nodes($cluster, q{SELECT count(*) FROM pg_namespace WHERE nspname = 'inbox'})),
	'1 1 1', 'the inbox schema stays on every node, as PostgreSQL keeps it on one');

# Until no shard is left behind, a DBA drops the orphans by hand: CREATE EXTENSION refuses a
# schema inbox that holds objects which are not the extension's.
like(psql_error($coordinator, 'CREATE EXTENSION inbox'), qr/not part of the extension/,
	'CREATE EXTENSION refuses the schema the orphaned shards are in');
for my $worker (@workers)
{
	$worker->safe_psql('postgres', q{
		DO $$
		DECLARE shard regclass;
		BEGIN
			FOR shard IN SELECT c.oid FROM pg_class c
			             WHERE c.relnamespace = 'inbox'::regnamespace AND c.relkind = 'r' LOOP
				EXECUTE format('DROP TABLE %s', shard);
			END LOOP;
		END $$});
}

# Created again, and distributed by consumer this time.
$coordinator->safe_psql('postgres', 'CREATE EXTENSION inbox');
distribute_table($cluster, 'inbox.messages', 'consumer');
is(shard_placements($cluster, 'inbox.messages'), 'coordinator:0 worker1:2 worker2:2',
	'inbox.messages distributed by consumer');
is($coordinator->safe_psql('postgres', $markers), '0', 'the new marker table is empty');
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(inbox.claim(c, 'm-1')::text, ' ' ORDER BY i)
          FROM unnest(ARRAY['a', 'b', 'c', 'a']) WITH ORDINALITY AS u(c, i)}),
	'true true true false', 'claims by consumer: first copies and a duplicate');

TODO:
{
	local $TODO = 'issue 11 (5): Citus refuses to convert a table that belongs to an extension';
	is(psql_error($coordinator, q{SELECT undistribute_table('inbox.messages')}), '',
		'undistribute_table brings the markers back to the coordinator');
}
is($coordinator->safe_psql('postgres', $markers), '3', 'and keeps them');

$_->stop for @{ $cluster->{nodes} };
done_testing();
