# inbox.complete() beside a purge of distributed markers, by either distribution column: the
# result goes with its marker whichever comes first (test/isolation/specs/purge_beside_complete.spec
# on one node). complete() locks the marker on its shard, so the coordinator's purge waits for
# its commit and then deletes the result with the marker, and a complete() that meets the
# purge's delete waits for it and finds no marker. A marker among a few of one second (deleted
# by range) and one of a burst larger than a batch (deleted by its keys).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;
use InboxTest;

my $cluster = citus_cluster('beside_complete', <<'EOF_CONF');
inbox.retention = '1h'
inbox.purge_batch_size = 10
EOF_CONF
my $coordinator = $cluster->{coordinator};
my @cases = ([ 'few', 'few-2' ], [ 'burst', 'burst-25' ]);

sub load_markers
{
	$coordinator->safe_psql('postgres', 'DELETE FROM inbox.messages');
	insert_markers($coordinator, 'few', 3, '2 hours');
	insert_markers($coordinator, 'burst', 50, '2 hours');
}

sub complete_sql
{
	my ($consumer, $id) = @_;
	return qq{SELECT inbox.complete('$consumer', '$id', '{"order": 1, "status": 201}')};
}

my $waits = 'SELECT count(*) > 0 FROM citus_lock_waits';
my $left = q{SELECT (SELECT count(*) FROM inbox.messages) || ' markers, '
    || (SELECT count(*) FROM inbox.marker_details) || ' details'};

for my $column ('message_key', 'consumer_id')
{
	distribute_inbox($cluster, distribution_column => $column);
	for my $case (@cases)
	{
		my ($consumer, $id) = @$case;
		load_markers();
		my $completer = $coordinator->background_psql('postgres');
		$completer->query_safe('BEGIN');
		$completer->query_safe(complete_sql($consumer, $id));
		my $purger = $coordinator->background_psql('postgres');
		$purger->query_until(qr/started/, "\\echo started\nCALL inbox.purge();\n");
		ok($coordinator->poll_query_until('postgres', $waits),
			"by $column, $consumer: the purge waits for complete()");
		$completer->query_safe('COMMIT');
		$purger->query_safe('');
		$_->quit for $completer, $purger;
		is($coordinator->safe_psql('postgres', $left),
			'0 markers, 0 details', "by $column, $consumer: then deletes the result with the marker");
		is( $coordinator->safe_psql(
				'postgres', qq{SELECT inbox.receive('$consumer', '$id');
				SELECT inbox.receive('$consumer', '$id')}),
			"(processed,,0)\n(duplicate,,0)",
			"by $column, $consumer: a new delivery is processed, its copy a duplicate without the old result"
		);
	}
	for my $case (@cases)
	{
		my ($consumer, $id) = @$case;
		load_markers();
		my $purger = $coordinator->background_psql('postgres');
		$purger->query_safe('BEGIN');
		$purger->query_safe('CALL inbox.purge()');
		my $completer = $coordinator->background_psql('postgres', on_error_stop => 0);
		$completer->query_until(qr/started/,
			"\\echo started\n\\set VERBOSITY terse\n" . complete_sql($consumer, $id) . ";\n");
		ok($coordinator->poll_query_until('postgres', $waits),
			"by $column, $consumer: complete() waits for the purge");
		$purger->query_safe('COMMIT');
		$completer->query('');
		like($completer->{stderr}, qr/55000|has no marker/,
			"by $column, $consumer: then finds no marker");
		$_->quit for $completer, $purger;
		is($coordinator->safe_psql('postgres', $left),
			'0 markers, 0 details', "by $column, $consumer: and stores nothing");
	}
}

done_testing();
