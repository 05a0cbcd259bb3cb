# inbox.stats stays cheap for the planner too: autovacuum analyzes the consumer registry as soon
# as a consumer registers (a registry of a few rows never reaches autovacuum's default threshold,
# and the planner's guess of hundreds of consumers would put the view's estimated cost, which
# grows per consumer, above jit_above_cost: a JIT compilation slower than the query on every
# call).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('stats_cost', "autovacuum_naptime = 1\ninbox.purge_worker = off\n");
$node->safe_psql('postgres', q{
	CREATE EXTENSION inbox;
	SELECT inbox.claim('consumer-' || c, 'm-' || m) FROM generate_series(1, 5) c, generate_series(1, 2000) m;
	ANALYZE inbox.markers;
});

ok( $node->poll_query_until('postgres', q{
		SELECT last_autoanalyze IS NOT NULL FROM pg_stat_user_tables
		WHERE relid = 'inbox.consumer_registry'::regclass}),
	'autovacuum analyzes a registry of five consumers');
is($node->safe_psql('postgres',
		q{SELECT reltuples FROM pg_class WHERE oid = 'inbox.consumer_registry'::regclass}),
	'5', 'the planner knows how many consumers there are');
my $plan = $node->safe_psql('postgres', 'EXPLAIN (FORMAT JSON) SELECT * FROM inbox.stats');
my ($cost) = $plan =~ /"Total Cost": ([0-9.]+)/;
cmp_ok($cost, '<', $node->safe_psql('postgres', 'SHOW jit_above_cost'),
	"the view's estimated cost ($cost) stays below jit_above_cost");

$node->stop;
done_testing();
