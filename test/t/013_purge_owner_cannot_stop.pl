# Nothing a database owner may do to his database stops or throttles its purge worker (or the
# registration of a new consumer), and no data the marker table can hold makes a worker
# spin: the worker pins the settings it depends on (as autovacuum does), takes a purge lock no
# SQL session can take, resolves no name through the database's search_path, and stays inside
# its time budget. Each case is checked against a database that the same worker purges normally.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use InboxTest;

my $node = inbox_node('owner', <<'EOF_CONF');
inbox.retention = '1min'
inbox.purge_interval = '200ms'
inbox.purge_batch_size = 100
EOF_CONF

$node->safe_psql('postgres', 'CREATE ROLE shop_owner LOGIN');
for my $db (qw(shop control exempt))
{
	$node->safe_psql('postgres', "CREATE DATABASE $db OWNER shop_owner");
	$node->safe_psql($db, 'CREATE EXTENSION inbox');
}

# The owner of shop, not a superuser, does what he may: settings that would make every cycle
# fail (read-only transactions, tiny timeouts), throttle it (a batch of one, no index scans), or
# redirect its names (a case-insensitive collation "C" and operators before pg_catalog).
$node->safe_psql('shop', q{
	CREATE SCHEMA shadow;
	CREATE COLLATION shadow."C" (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
	CREATE FUNCTION shadow.matches(a text, b text) RETURNS boolean LANGUAGE sql AS 'SELECT false';
	CREATE OPERATOR shadow.> (LEFTARG = text, RIGHTARG = text, FUNCTION = shadow.matches);
	ALTER DATABASE shop SET default_transaction_read_only = on;
	ALTER DATABASE shop SET statement_timeout = '1ms';
	ALTER DATABASE shop SET lock_timeout = '1ms';
	ALTER DATABASE shop SET inbox.purge_batch_size = 1;
	ALTER DATABASE shop SET enable_indexscan = off;
	ALTER DATABASE shop SET enable_bitmapscan = off;
	ALTER DATABASE shop SET search_path = shadow, pg_catalog;
}, extra_params => [ '-U', 'shop_owner' ]);

# And he holds the advisory lock the purge of 1.0 used, forever.
# (Without the database's statement_timeout of 1 ms from the start: even a SET could exceed it.)
my $squatter = do {
	local $ENV{PGOPTIONS} = '-c statement_timeout=0';
	$node->background_psql('shop', extra_params => [ '-U', 'shop_owner' ]);
};
$squatter->query_safe(
	'SELECT pg_advisory_lock(1768841848, 1), pg_advisory_lock(1768841848::bigint << 32 | 1)');

# exempt opts out, as a superuser may decide for a database.
$node->safe_psql('postgres', 'ALTER DATABASE exempt SET inbox.purge_worker = off');

# Markers written past the owner's settings; 'a' and 'A' are two consumers, one collation "C"
# away from being one. All of a database's markers in one transaction, so that the cycle that
# purges them sees them all (the log line checked below counts them): a cycle every 200 ms
# could otherwise fall between two of the writes.
sub write_markers
{
	my ($db, @sets) = @_;
	my $inserts = join '', map {
		my ($consumer, $count, $age) = @$_;
		"INSERT INTO inbox.messages (consumer, message_id, processed_at) "
		  . "SELECT '$consumer', '$consumer-' || i, now() - interval '$age' "
		  . "FROM generate_series(1, $count) i; "
	} @sets;
	# The owner's settings off from the connection's start, as the squatter's timeout: a first
	# SET under shop's statement_timeout of 1 ms was cancelled once, on a loaded machine.
	local $ENV{PGOPTIONS} = '-c statement_timeout=0 -c default_transaction_read_only=off '
	  . '-c search_path=pg_catalog';
	$node->safe_psql($db, "BEGIN READ WRITE; $inserts COMMIT;");
}
my $log_offset = -s $node->logfile;
for my $db (qw(shop control exempt))
{
	write_markers($db, [ 'a', 500, '1 hour' ], [ 'A', 500, '1 hour' ], [ 'fresh', 5, '0 s' ]);
}

# The checks run as a role of their own, exempt (ALTER ROLE ... IN DATABASE) from the owner's
# settings that the worker must pin for itself: the bootstrap superuser, as whom the worker
# connects, keeps the database's settings.
$node->safe_psql('postgres', q{
	CREATE ROLE checker SUPERUSER LOGIN;
	ALTER ROLE checker IN DATABASE shop SET statement_timeout = 0;
	ALTER ROLE checker IN DATABASE shop SET default_transaction_read_only = off;
	ALTER ROLE checker IN DATABASE shop SET search_path = pg_catalog;
});
sub poll_as_checker
{
	my ($db, $query) = @_;
	for (1 .. 1800)
	{
		return 1 if $node->safe_psql($db, $query, extra_params => [ '-U', 'checker' ]) eq 't';
		usleep(100_000);
	}
	return 0;
}
for my $db (qw(control shop))
{
	ok(poll_as_checker($db, "SELECT count(*) = 0 FROM inbox.messages WHERE consumer IN ('a', 'A')"),
		"$db: expired markers of both consumers are purged");
	is( $node->safe_psql($db, "SELECT count(*) FROM inbox.messages WHERE consumer = 'fresh'",
			extra_params => [ '-U', 'checker' ]),
		5, "$db: fresh markers stay");
}
$node->wait_for_log(
	qr/inbox purge worker of database "shop" deleted 1000 expired markers in 10 batches/,
	$log_offset);
pass('shop: purged in batches of the server-wide inbox.purge_batch_size, not its own');
is($node->safe_psql('control', "SELECT last_error IS NULL FROM inbox.workers WHERE database = 'shop'"),
	't', 'shop: no cycle failed');

# A new consumer registers in the claiming session, through names no search_path redirects: the
# first claim of a consumer new to shop (by the checker, whose own session is exempt from the
# owner's timeouts) registers it.
is( $node->safe_psql('shop', q{SELECT inbox.claim('newcomer', 'n-1')},
		extra_params => [ '-U', 'checker' ]),
	't', 'shop: a new consumer is registered whatever the owner set');

ok(wait_for_next_cycle($node, 'control', 'control'), 'control: another whole cycle ran');
is($node->safe_psql('exempt', "SELECT count(*) FROM inbox.messages WHERE consumer IN ('a', 'A')"),
	'1000', 'exempt: ALTER DATABASE ... SET inbox.purge_worker = off keeps its markers');
$squatter->quit;

# Markers no function writes but the table can hold (the owner of the table wrote them, say in a
# migration from another inbox): a consumer of 300 bytes, and an empty one. They are purged, and
# the worker ends its run instead of spinning with an old snapshot.
add_markers($node, 'control', 'long' x 75, 300, '1 hour');
add_markers($node, 'control', '', 300, '1 hour');
add_markers($node, 'control', 'after', 300, '1 hour');
ok($node->poll_query_until('control', 'SELECT count(*) = 5 FROM inbox.messages'),
	'control: the long and the empty consumer are purged, and the consumers after them');
ok( $node->poll_query_until('control', q{
		SELECT count(*) = 0 FROM pg_stat_activity
		WHERE backend_type = 'inbox purge worker'
		  AND xact_start < clock_timestamp() - interval '5 s'}),
	'no worker holds a transaction (and its snapshot) for long');

# A trigger on the marker table runs, under the worker too, inside a security-restricted
# operation: it cannot create a temporary table, and the cycle fails visibly.
$node->safe_psql('control', q{
	CREATE FUNCTION make_temp_table() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		CREATE TEMPORARY TABLE IF NOT EXISTS planted (x int);
		RETURN NULL;
	END $$;
	CREATE TRIGGER make_temp_table AFTER DELETE ON inbox.markers
		FOR EACH ROW EXECUTE FUNCTION make_temp_table();
});
add_markers($node, 'control', 'guarded', 20, '1 hour');
ok( $node->poll_query_until('control',
		"SELECT last_error LIKE '%security-restricted operation%' FROM inbox.workers WHERE database = 'control'"),
	'the worker cannot create a temporary table from a trigger, and says so in inbox.workers');
is(marker_count($node, 'control', 'guarded'), 20, 'and deletes nothing in that cycle');

$node->stop;
done_testing();
