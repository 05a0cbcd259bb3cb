# A cluster whose inbox 1.0 Citus distributes (its one table, inbox.messages): ALTER EXTENSION
# inbox UPDATE does not bring it to 1.1 yet (TODO), and the documented way round it keeps every
# marker.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('update');
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };

$coordinator->safe_psql('postgres', q{
    DROP EXTENSION inbox;
    CREATE EXTENSION inbox VERSION '1.0';
    SELECT create_distributed_table('inbox.messages', 'message_id');
    SELECT truncate_local_data_after_distributing_table('inbox.messages');
    SELECT inbox.claim('c-' || g % 3, 'm-' || g) FROM generate_series(1, 300) g;
});
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.messages'), '300',
	'1.0 with its markers distributed');

TODO:
{
	local $TODO = 'the update reads 1.0\'s table with a recursive skip scan, which Citus cannot '
	  . 'plan on a distributed table; and Citus runs the update again on each worker, whose copy '
	  . 'of inbox.messages is the distributed table too';
	is(psql_error($coordinator, 'ALTER EXTENSION inbox UPDATE'), '', 'ALTER EXTENSION inbox UPDATE');
}
is($coordinator->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'inbox'}),
	'1.0', 'the failed update left 1.0 as it was');

# The way round it (docs/citus.md): keep the markers aside, drop 1.0 and the
# shards its DROP EXTENSION leaves, create 1.1 and put the markers back.
$coordinator->safe_psql('postgres', q{
    CREATE TABLE saved_markers AS SELECT * FROM inbox.messages;
    DROP EXTENSION inbox;
    SELECT run_command_on_workers($cmd$
        DO $do$
        DECLARE shard regclass;
        BEGIN
            FOR shard IN SELECT c.oid FROM pg_class c
                         WHERE c.relnamespace = 'inbox'::regnamespace AND c.relkind = 'r' LOOP
                EXECUTE format('DROP TABLE %s', shard);
            END LOOP;
        END $do$ $cmd$);
    CREATE EXTENSION inbox;
    SELECT inbox.distribute();
    SELECT inbox.configure_consumer(consumer) FROM (SELECT DISTINCT consumer FROM saved_markers) c;
    INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
    SELECT inbox.marker_time_bucket(s.processed_at), r.id, inbox.marker_time_offset(s.processed_at),
           inbox.message_key(s.message_id)
    FROM saved_markers s JOIN inbox.consumer_registry r ON r.name = s.consumer;
    DROP TABLE saved_markers;
});
is($coordinator->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'inbox'}),
	$coordinator->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'inbox'}),
	'the default version created again');
is($coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.messages'), '300',
	'every marker is back');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE inbox.claim('c-' || g % 3, 'm-' || g))
		  FROM generate_series(1, 301) g}),
	'1', 'each is a duplicate, and a new message is processed');

$_->stop for @{ $cluster->{nodes} };
done_testing();
