# inbox.stats on distributed markers: the view answers on the coordinator, retained counts the
# markers on the shards (exact when few, estimated from a sample of the shards when many), and
# the counters are those of the whole cluster, claims that Citus ran on a worker included.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('stats');
my $coordinator = $cluster->{coordinator};
my @workers = @{ $cluster->{workers} };

distribute_inbox($cluster);
$coordinator->safe_psql('postgres', q{
    SELECT inbox.claim('few', 'f-' || g) FROM generate_series(1, 10) g;
    SELECT inbox.claim('few', 'f-1');
});
insert_markers($coordinator, 'bulk', 200000, '1 hour');

is( $coordinator->safe_psql('postgres',
		q{SELECT applied || '|' || duplicates FROM inbox.stats_counters() WHERE consumer = 'few'}),
	'10|1', 'claims run on the coordinator are counted in its counters');

my $stats = q{SELECT consumer || ':' || retained || ':' || (oldest_processed_at IS NOT NULL)
    FROM inbox.stats WHERE consumer IN ('few', 'bulk') ORDER BY consumer};
is(psql_error($coordinator, $stats), '', 'inbox.stats answers on the coordinator');
my %retained =
  map { my ($consumer, $count) = split /:/; ($consumer => $count) }
  split /\n/, $coordinator->safe_psql('postgres', $stats);
is($retained{few}, '10', 'retained: exact for a consumer with few markers');
ok(abs($retained{bulk} - 200000) <= 20000,
	"retained: the estimate for a consumer with 200000 markers is within 10% ($retained{bulk})");
is( $coordinator->safe_psql('postgres', q{
		SELECT count(*) FROM inbox.stats WHERE consumer IN ('few', 'bulk')
		   AND oldest_processed_at BETWEEN now() - interval '2 hours' AND now()}),
	'2', 'oldest_processed_at: the oldest marker on any shard');
is( $coordinator->safe_psql('postgres', q{
		SELECT pg_relation_size('inbox.markers') || '|' || (citus_relation_size('inbox.markers') > 0)}),
	'0|true', 'the coordinator\'s own table is empty: the markers are in the shards');
is( $coordinator->safe_psql('postgres', q{
		SELECT count(*) FROM inbox.markers m JOIN inbox.consumer_registry r ON r.id = m.consumer_id
		WHERE r.name = 'bulk'}),
	'200000', 'the markers are there, on the workers');

# The grants the README gives a monitoring role, on the coordinator only: the view reads the
# workers as the owner of the markers.
$coordinator->safe_psql('postgres', q{
    CREATE ROLE monitoring LOGIN;
    GRANT USAGE ON SCHEMA inbox TO monitoring;
    GRANT SELECT ON inbox.stats TO monitoring;
    GRANT EXECUTE ON FUNCTION inbox.stats_counters(), inbox.marker_counts() TO monitoring;
});
is( $coordinator->safe_psql('postgres',
		q{SELECT applied || '|' || duplicates || '|' || retained FROM inbox.stats
		  WHERE consumer = 'few'}, extra_params => [ '-U', 'monitoring' ]),
	'10|1|10', 'a monitoring role reads inbox.stats on the coordinator');

# inbox.grant_access(..., 'monitor') gives what every view needs on Citus, which reads the
# registry behind inbox.consumers and inbox.attempts with the reader's own privileges.
$coordinator->safe_psql('postgres', q{
    CREATE ROLE watcher LOGIN;
    SELECT inbox.grant_access('watcher', 'monitor');
});
is( $coordinator->safe_psql('postgres', q{
		SELECT (SELECT retained FROM inbox.stats WHERE consumer = 'few') || '|'
		    || (SELECT count(*) FROM inbox.consumers WHERE consumer = 'few') || '|'
		    || (SELECT count(*) FROM inbox.attempts) || '|'
		    || (SELECT count(*) FROM inbox.workers)},
		extra_params => [ '-U', 'watcher' ]),
	'10|1|0|0', 'a role given monitor access reads every view on the coordinator');

# A function delegated to the worker that holds a message's marker: Citus runs the claim there,
# so it counts in that worker's shared memory.
$coordinator->safe_psql('postgres', q{
    CREATE FUNCTION claim_here(key bytea, consumer text, message_id text) RETURNS boolean
    LANGUAGE plpgsql AS $$ BEGIN RETURN inbox.claim(consumer, message_id); END $$;
    SELECT create_distributed_function('claim_here(bytea, text, text)', 'key',
                                       colocate_with := 'inbox.markers');
    SELECT inbox.configure_consumer('delegated');
    SELECT inbox.stats_reset();
});
my @answers = map {
	$coordinator->safe_psql('postgres',
		"SELECT claim_here(inbox.message_key('$_'), 'delegated', '$_')")
} qw(d-1 d-2 d-3 d-4 d-1 d-2);
is("@answers", 't t t t f f', 'delegated claims answer as on one node');

my $counters = q{SELECT coalesce(sum(applied), 0) || '|' || coalesce(sum(duplicates), 0)
    FROM inbox.stats_counters() WHERE consumer = 'delegated'};
my ($applied, $duplicates) = (0, 0);
for my $worker (@workers)
{
	my ($a, $d) = split /\|/, $worker->safe_psql('postgres', $counters);
	$applied += $a;
	$duplicates += $d;
}
is("$applied|$duplicates", '4|2', 'the delegated claims counted on the workers that ran them');
is($coordinator->safe_psql('postgres', $counters), '4|2',
	'the coordinator\'s counters add every worker\'s');
is( $coordinator->safe_psql('postgres',
		q{SELECT applied || '|' || duplicates FROM inbox.stats WHERE consumer = 'delegated'}),
	'4|2', 'and so does inbox.stats');

$coordinator->safe_psql('postgres', 'SELECT inbox.stats_reset()');
is( join(' ', map { $_->safe_psql('postgres', $counters) } @{ $cluster->{nodes} }),
	'0|0 0|0 0|0', 'inbox.stats_reset() on the coordinator resets every node\'s counters');

# A worker node shows its own counters, and the markers of every shard.
is( $workers[0]->safe_psql('postgres',
		q{SELECT retained FROM inbox.stats WHERE consumer = 'few'}),
	'10', 'inbox.stats on a worker node counts the markers of every shard');

# The coordinator registers consumers, which hands out their ids: a claim on a worker of a
# consumer that is new has the coordinator register it; a worker registers none itself.
is( $coordinator->safe_psql('postgres',
		q{SELECT claim_here(inbox.message_key('n-1'), 'new-on-worker', 'n-1')}),
	't', 'a delegated claim of a new consumer');
is( join(' ', map { $_->safe_psql('postgres', q{SELECT coalesce(sum(applied), 0)
		FROM inbox.stats_counters() WHERE consumer = 'new-on-worker'}) } @workers),
	marker_node($cluster, 'n-1') eq 'worker1' ? '1 0' : '0 1', 'which ran on the marker\'s worker');
is( join(' ', on_nodes($cluster,
	q{SELECT id FROM inbox.consumer_registry WHERE name = 'new-on-worker'})),
	join(' ', ($coordinator->safe_psql('postgres',
		q{SELECT id FROM inbox.consumer_registry WHERE name = 'new-on-worker'})) x 3),
	'the coordinator registered it, under one id on every node');
is( $workers[0]->safe_psql('postgres', q{SELECT inbox.consumer_id('registered-on-worker')}),
	$coordinator->safe_psql('postgres',
		q{SELECT id FROM inbox.consumer_registry WHERE name = 'registered-on-worker'}),
	'inbox.consumer_id on a worker node has the coordinator register the consumer');

# A consumer's settings reach the claims that run on a worker node (here a session of the worker
# itself, as clients of a Citus cluster may open): the coordinator's configure_consumer changes
# the worker's copy of the registry without invalidating what the worker's sessions cache, so the
# worker reads it afresh.
$coordinator->safe_psql('postgres', q{
    CREATE FUNCTION refuse(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'refused' USING ERRCODE = 'P0001';
    END $$;
});
my $session = $workers[0]->background_psql('postgres', on_error_stop => 0);
is($session->query_safe(q{SELECT inbox.claim('limited', 'p-0')}), 't',
	'a worker node\'s session claims for a consumer without a limit');
$coordinator->safe_psql('postgres', q{SELECT inbox.configure_consumer('limited', max_attempts => 2)});
my @errors;
for (1 .. 3)
{
	$session->query(q{SELECT inbox.apply('limited', 'p-1', 'refuse(jsonb)', '{}')});
	push @errors, $session->{stderr} =~ /ERROR:  (refused|message "p-1" of consumer "limited" is poisoned)/;
	$session->{stderr} = '';
}
$session->quit;
is( join('|', @errors),
	'refused|refused|message "p-1" of consumer "limited" is poisoned',
	'max_attempts set on the coordinator afterwards poisons the message in that session');

$_->stop for @{ $cluster->{nodes} };
done_testing();
