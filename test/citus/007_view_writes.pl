# The owner's writes through the view inbox.messages on a distributed store (docs/markers.md,
# "The marker table"): a DELETE by processed_at or by consumer takes exactly the markers it
# names, with their details, on every shard; an INSERT registers and stores as on one node.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('view_writes');
my $coordinator = $cluster->{coordinator};
distribute_inbox($cluster);

# 40 old markers (with details, as inbox.receive keeps them) and 40 recent ones, over every shard.
insert_markers($coordinator, 'aged', 40, '40 days', 'old');
insert_markers($coordinator, 'aged', 40, '1 day', 'new');
$coordinator->safe_psql('postgres', q{
    INSERT INTO inbox.marker_details (time_bucket, consumer_id, time_offset, message_key, fingerprint)
    SELECT m.time_bucket, m.consumer_id, m.time_offset, m.message_key, 7 FROM inbox.markers m;
});
is(shard_placements($cluster, 'inbox.markers'), 'coordinator:0 worker1:2 worker2:2',
	'the markers are spread over both workers');

my $counts = q{SELECT (SELECT count(*) FROM inbox.markers WHERE message_key IN
                        (SELECT inbox.message_key('old-' || g) FROM generate_series(1, 40) g))
                      || ' ' || (SELECT count(*) FROM inbox.markers)
                      || ' ' || (SELECT count(*) FROM inbox.marker_details)};
is($coordinator->safe_psql('postgres', $counts), '40 80 80', 'old markers, markers, details');

is( psql_error($coordinator,
		q{DELETE FROM inbox.messages WHERE processed_at < now() - interval '30 days'}),
	'', 'DELETE through inbox.messages by processed_at');
is($coordinator->safe_psql('postgres', $counts), '0 40 40',
	'exactly the old markers are gone, with their details');

# The examples of docs/markers.md, as the owner runs them.
is( psql_error($coordinator, q{
    INSERT INTO inbox.messages (consumer, message_id, processed_at)
    VALUES ('imports', 'imported-0001', now() - interval '3 days')}),
	'', 'INSERT through inbox.messages');
is( $coordinator->safe_psql('postgres', q{
		SELECT consumer || ' ' || message_id || ' ' || (processed_at < now() - interval '2 days')
		FROM inbox.messages WHERE consumer = 'imports'}),
	'imports imported-0001 true', 'the inserted marker reads back');
is(psql_error($coordinator, q{DELETE FROM inbox.messages WHERE consumer = 'imports'}),
	'', 'DELETE through inbox.messages by consumer');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE consumer = 'imports') || ' ' || count(*) FROM inbox.messages}),
	'0 40', 'only that consumer\'s marker is gone');

$_->stop for @{ $cluster->{nodes} };
done_testing();
