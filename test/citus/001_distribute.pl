# The marker store distributed with inbox.distribute() and used from the coordinator: claim,
# apply, forget, receive, complete and the batches answer as on one node, a concurrent copy waits
# for the first and answers right, a handler error takes the marker with it, a marker and a
# business row on different workers commit and roll back together, a session's kept plans follow
# the distribution, pg_dump keeps the markers, business tables co-locate with the markers by the
# stored key, and REPEATABLE READ answers as documented.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('distribute', 'citus.recover_2pc_interval = -1');
my $coordinator = $cluster->{coordinator};

my $version = $coordinator->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'inbox'");
is( join(' ', on_nodes($cluster, "SELECT extversion FROM pg_extension WHERE extname = 'inbox'")),
	"$version $version $version",
	'CREATE EXTENSION on the coordinator creates the extension on every worker');

# A session that claimed before the distribution keeps its prepared statements: they must follow
# the tables to their shards.
my $early = $coordinator->background_psql('postgres');
is($early->query_safe(q{SELECT inbox.claim('replan', 'before')}), 't',
	'a claim before the distribution');

# A claim that waits for the distribution at its insert (the session knows the store and the
# consumer from a claim before) goes on with the distributed store, not the coordinator's empty
# table that remains of it.
# (Two claims: a backend caches a consumer it registered itself from its next transaction on.)
my $waiting = $coordinator->background_psql('postgres');
is($waiting->query_safe(q{SELECT inbox.claim('waited', 'known')}), 't',
	'a claim before the distribution, in a session that waits for it next');
is($waiting->query_safe(q{SELECT inbox.claim('waited', 'known-2')}), 't',
	'and another, which caches its consumer');
my $distributor = $coordinator->background_psql('postgres');
$distributor->query_safe('BEGIN');
$distributor->query_safe('SELECT inbox.distribute()');
$waiting->query_until(qr/started/,
	"\\echo started\nSELECT inbox.claim('waited', 'during');\n");
ok( $coordinator->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_locks
		WHERE relation = 'inbox.markers'::regclass AND NOT granted}),
	'a claim waits for the distribution at the marker table');
$distributor->query_safe('COMMIT');
is($waiting->query_safe(''), 't', 'and claims its message once the store is distributed');
$_->quit for $waiting, $distributor;
is($coordinator->safe_psql('postgres', q{SELECT inbox.claim('waited', 'during')}), 'f',
	'whose marker is on the shards: a copy is a duplicate');

is( join(' ', map { shard_placements($cluster, $_) } 'inbox.markers', 'inbox.marker_details'),
	'coordinator:0 worker1:2 worker2:2 coordinator:0 worker1:2 worker2:2',
	'inbox.distribute(): the markers and their details over both workers');
is( $coordinator->safe_psql('postgres', q{
		SELECT string_agg(logicalrelid::text || ':' || partmethod::text || repmodel::text || ':'
		                  || coalesce(column_to_column_name(logicalrelid, partkey), '-'), ' '
		                  ORDER BY logicalrelid::text)
		FROM pg_dist_partition}),
	'inbox.consumer_registry:nt:- inbox.marker_details:hs:message_key inbox.markers:hs:message_key',
	'distributed by message_key in one co-location group, the registry a reference table');
is( $coordinator->safe_psql('postgres', q{
		SELECT count(DISTINCT colocationid) FROM pg_dist_partition
		WHERE logicalrelid IN ('inbox.markers'::regclass, 'inbox.marker_details'::regclass)}),
	'1', 'markers and details are co-located');

is($early->query_safe(q{SELECT inbox.claim('replan', 'before')}), 'f',
	'the same session, after the distribution: the marker copied to the shards is a duplicate');
is($early->query_safe(q{SELECT inbox.claim('replan', 'after')}), 't',
	'and a new message is claimed');
$early->quit;
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(message_id, ' ' ORDER BY message_id) FROM inbox.messages
		  WHERE consumer = 'replan'}),
	'after before',
	'both markers are in the distributed table');

# claim and forget from the coordinator.
my $claim = q{SELECT inbox.claim('orders', 'o-1')};
is($coordinator->safe_psql('postgres', $claim), 't', 'claim: first copy');
is($coordinator->safe_psql('postgres', $claim), 'f', 'claim: duplicate');
is($coordinator->safe_psql('postgres', q{SELECT inbox.forget('orders', 'o-1')}), 't', 'forget');
is($coordinator->safe_psql('postgres', q{SELECT inbox.forget('orders', 'o-1')}), 'f',
	'forget of a marker that is gone');
is($coordinator->safe_psql('postgres', q{SELECT inbox.claim('orders', 'o-1')}), 't',
	'claim after forget: processed again');
is( $coordinator->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE inbox.claim('orders', 'o-' || g))
          FROM generate_series(1, 200) g}),
	'199', 'a claim per row of a query: every marker but the existing one is new');

# A new consumer registers in a transaction of its own, unless the caller's transaction wrote
# to the registry: Citus locks a reference table's shard for each writing transaction, and the
# registering worker would wait for the caller, which waits for it.
is( $coordinator->safe_psql('postgres', q{
		SET statement_timeout = '10s';
		BEGIN;
		SELECT inbox.configure_consumer('configured', retention => '1 day');
		SELECT inbox.claim('registered-after', 'm-1');
		COMMIT;
		SELECT count(*) FROM inbox.consumers WHERE consumer IN ('configured', 'registered-after')}),
	"\nt\n2", 'a transaction that configured a consumer registers another');

# The outcomes of 1.1: a fingerprint and a result kept beside the marker, on its shard.
is( $coordinator->safe_psql('postgres', q{
		SELECT (inbox.receive('requests', 'r-1', '{"amount": 5}')).outcome;
		SELECT inbox.complete('requests', 'r-1', '{"receipt": 17}');
		SELECT row(r.outcome, r.result)::text FROM inbox.receive('requests', 'r-1', '{"amount": 5}') r;
		SELECT (inbox.receive('requests', 'r-1', '{"amount": 6}')).outcome}),
	"processed\n\n(duplicate,\"{\"\"receipt\"\": 17}\")\npayload_mismatch",
	'receive and complete: processed, the stored result for a copy, a mismatching payload');
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(id, ' ' ORDER BY id) FROM inbox.claim_batch('batch',
		      ARRAY['b-1', 'b-2', 'b-3', 'b-2', 'b-4', 'b-5', 'b-6']) AS b(id)}),
	'b-1 b-2 b-3 b-4 b-5 b-6', 'claim_batch over every shard: each id claimed once');
is( $coordinator->safe_psql('postgres',
		q{SELECT string_agg(id, ' ' ORDER BY id) FROM inbox.claim_batch('batch',
		      ARRAY['b-1', 'b-7', 'b-3', 'b-8']) AS b(id)}),
	'b-7 b-8', 'claim_batch: only the new ids');

# Overlapping batches in several sessions at once, their ids spread over every shard and given
# in different orders: none deadlocks (on one node each batch locks in the key's order; across
# shards Citus takes its shard locks in one order).
$coordinator->pgbench(
	'--no-vacuum --client=4 --jobs=4 --transactions=25',
	0,
	[qr{processed: 100/100}],
	[qr{^$}],
	'claim_batch in four sessions over the same ids: no deadlock',
	{
		'overlapping_batches' => q{
			\set round random(1, 2)
			BEGIN;
			SELECT count(*) FROM inbox.claim_batch('overlap',
			    ARRAY(SELECT 'o-' || :round || '-' || g FROM generate_series(1, 40) g ORDER BY random()));
			SELECT pg_sleep(0.01);
			SELECT count(*) FROM inbox.claim_batch('overlap-2',
			    ARRAY(SELECT 'o-' || :round || '-' || g FROM generate_series(1, 40) g ORDER BY random()));
			ROLLBACK;
		}
	});

# The business data: accounts distributed by their own key (another co-location group), and a
# handler that credits one.
$coordinator->safe_psql('postgres', q{
    CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0
                           CHECK (balance < 1000000));
    CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
        WHERE id = (payload ->> 'account')::int;
    END $$;
    CREATE FUNCTION failing_credit(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM credit(payload);
        RAISE EXCEPTION 'downstream refused' USING ERRCODE = 'P0001';
    END $$;
});
distribute_table($cluster, 'accounts', 'id');
$coordinator->safe_psql('postgres',
	'INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 10) g');

is( $coordinator->safe_psql('postgres', q{
		SELECT string_agg(message_id || ':' || outcome::text || ':' || coalesce(sqlstate, '-'), ' '
		                  ORDER BY message_id)
		FROM inbox.apply_batch('batch-apply', 'failing_credit(jsonb)'::regprocedure,
		    '[{"id": "x-1", "payload": {"account": 2, "amount": 1}}]')}),
	'x-1:failed:P0001', 'apply_batch: a failing handler is reported and rolled back alone');
is( $coordinator->safe_psql('postgres', q{
		SELECT count(*) FROM inbox.messages WHERE consumer = 'batch-apply'}),
	'0', 'and its marker went with its subtransaction');

# A payment whose marker lands on the other worker than account 1.
my $account_node = shard_node($cluster, 'accounts', 1);
my ($payment) = grep { marker_node($cluster, $_) ne $account_node } map { "pay-$_" } 1 .. 20;
my $apply = qq{SELECT inbox.apply('payments', '$payment', 'credit(jsonb)',
    '{"account": 1, "amount": 100}')};
my $balance = q{SELECT balance FROM accounts WHERE id = 1};
my $marker = qq{SELECT count(*) FROM inbox.messages WHERE consumer = 'payments'
    AND message_id = '$payment'};
sub marker_and_balance
{
	return join('|', map { $coordinator->safe_psql('postgres', $_) } $marker, $balance);
}

like( psql_error($coordinator,
		qq{SELECT inbox.apply('payments', '$payment', 'failing_credit(jsonb)',
            '{"account": 1, "amount": 100}')}),
	qr/^P0001: downstream refused/, 'apply: the handler error reaches the caller');
is(marker_and_balance(), '0|0', 'and the marker went with the rollback, as did the credit');

# Marker on one worker, account on the other: one transaction over two workers.
$coordinator->safe_psql('postgres', "BEGIN; $apply; ROLLBACK;");
is(marker_and_balance(), '0|0', 'rolled back: neither the marker nor the credit');

like( psql_error($coordinator, qq{BEGIN;
    SELECT inbox.claim('payments', '$payment');
    UPDATE accounts SET balance = balance + 2000000 WHERE id = 1;
    COMMIT;}),
	qr/^23514: /, 'the write on the account\'s worker fails after the marker was written');
is($coordinator->safe_psql('postgres', $marker), '0', 'and the marker on the other worker is gone');

my $session = $coordinator->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
is($session->query_safe($apply), 't', 'apply over two workers: processed');
is(marker_and_balance(), '1|100', 'the marker and the credit both committed');
is(remote_prepares($cluster, $pid), '2',
	'with two-phase commit, one prepared transaction per worker');
is($session->query_safe($apply), 'f', 'the redelivery is a duplicate');
$session->quit;
is($coordinator->safe_psql('postgres', $balance), '100', 'credited once');

# A concurrent copy waits for the transaction that holds the first one.
for my $outcome ('COMMIT', 'ROLLBACK')
{
	my $message = "race-$outcome";
	my $first = $coordinator->background_psql('postgres');
	my $second = $coordinator->background_psql('postgres');
	$first->query_safe('BEGIN');
	is($first->query_safe(qq{SELECT inbox.claim('race', '$message')}), 't',
		"$outcome: the first copy is claimed in an open transaction");
	$second->query_until(qr/started/,
		"\\echo started\nSELECT inbox.claim('race', '$message');\n");
	ok($coordinator->poll_query_until('postgres', 'SELECT count(*) > 0 FROM citus_lock_waits'),
		"$outcome: the second copy waits for it");
	$first->query_safe($outcome);
	is($second->query_safe(''), $outcome eq 'COMMIT' ? 'f' : 't',
		$outcome eq 'COMMIT'
		? 'the first committed: the second copy is a duplicate'
		: 'the first rolled back: the second copy is processed');
	$_->quit for $first, $second;
}

# receive(wait => false) answers in_progress at once while another transaction holds a copy.
# (The consumer is registered first: a registration in an open transaction would be in progress
# too, for every message of the consumer.)
$coordinator->safe_psql('postgres', q{SELECT inbox.configure_consumer('nowait')});
my $holder = $coordinator->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe(q{SELECT inbox.receive('nowait', 'held')});
my ($rc, $outcome, $stderr) = $coordinator->psql('postgres', q{SET statement_timeout = '3s';
    SELECT (inbox.receive('nowait', 'held', wait => false)).outcome});
$holder->query_safe('ROLLBACK');
$holder->quit;
is("$outcome$stderr", 'in_progress',
	'receive(wait => false): in_progress at once, not after the holder ends');

# The worker's millisecond timeout ends with the no-wait insert: later in the same transaction a
# claim of a copy held elsewhere waits for it, as it would without the receive before it. The
# held id is one whose marker is on the worker of the received one, so that the claim goes over
# the connection that carried the timeout.
my $held_later = $coordinator->safe_psql('postgres', q{
    WITH node_of AS (
        SELECT id, (SELECT nodeport FROM pg_dist_shard_placement p
                    WHERE p.shardid = get_shard_id_for_distribution_column(
                        'inbox.markers', inbox.message_key(id))) AS port
        FROM (SELECT 'held-later-' || n AS id FROM generate_series(1, 100) n
              UNION ALL SELECT 'fresh') ids)
    SELECT min(id) FROM node_of
    WHERE id <> 'fresh' AND port = (SELECT port FROM node_of WHERE id = 'fresh')});
$holder = $coordinator->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe(qq{SELECT inbox.claim('nowait', '$held_later')});
my $receiver = $coordinator->background_psql('postgres');
$receiver->query_safe('BEGIN');
is($receiver->query_safe(q{SELECT (inbox.receive('nowait', 'fresh', wait => false)).outcome}),
	'processed', 'receive(wait => false) of a new id: processed');
$receiver->query_until(qr/started/,
	"\\echo started\nSELECT inbox.claim('nowait', '$held_later');\n");
ok($coordinator->poll_query_until('postgres', 'SELECT count(*) > 0 FROM citus_lock_waits'),
	'a claim after it in the same transaction waits for the copy held elsewhere');
$holder->query_safe('ROLLBACK');
is($receiver->query_safe(''), 't', 'and is processed when the holder rolls back');
$receiver->query_safe('COMMIT');
$_->quit for $holder, $receiver;

# pg_dump of the coordinator's database writes every marker.
my $markers = $coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.markers');
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/markers.sql";
$coordinator->command_ok(
	[ 'pg_dump', '--data-only', '--table=inbox.markers', '--file', $dump,
		'--dbname', $coordinator->connstr('postgres') ],
	'pg_dump of the marker table');
my ($rows) = slurp_file($dump) =~ /^COPY inbox\.markers [^\n]*\n(.*?)^\\\.$/ms;
is(scalar(() = ($rows // '') =~ /\n/g), $markers, "the dump holds all $markers markers");

# Co-location with business rows: the markers are distributed by the stored form of the message
# id (bytea), which a text key cannot share a co-location group with; a table keyed by the same
# stored form can, and its rows then sit on the marker's shard.
$coordinator->safe_psql('postgres', q{
    CREATE TABLE invoices (id text COLLATE "C" PRIMARY KEY, paid boolean);
    CREATE TABLE receipts (message_key bytea PRIMARY KEY, message_id text NOT NULL);
});
like( psql_error($coordinator,
		q{SELECT create_distributed_table('invoices', 'id', colocate_with := 'inbox.markers')}),
	qr/cannot colocate tables/, 'a table keyed by text does not co-locate with the markers');
is( psql_error($coordinator,
		q{SELECT create_distributed_table('receipts', 'message_key', colocate_with := 'inbox.markers')}),
	'', 'a table keyed by the stored form (bytea) does');
my @ids = ('m-1', 'order 17', '0b6c5e0e-3f9a-4c1d-9d7e-2a8f4b6c1e53', 'ÅÄÖ', '0123456789abcdef');
is( join(' ', map { marker_node($cluster, $_) eq shard_node($cluster, 'receipts',
		"inbox.message_key('$_')") ? 'same' : 'other' } @ids),
	join(' ', map { 'same' } @ids),
	'a receipt keyed by inbox.message_key(id) is on the node of the marker of id');

# REPEATABLE READ. On one node a copy committed after the transaction's snapshot is a
# serialization failure (the snapshot cannot see the marker it conflicts with). On Citus a
# worker's snapshot is taken when the transaction first reaches that worker: a transaction that
# had not reached the marker's worker yet sees the committed copy, and claim answers false (the
# right business answer: the message was processed).
my $reader = $coordinator->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$reader->query_safe('SELECT count(*) FROM pg_class');
$coordinator->safe_psql('postgres', q{SELECT inbox.claim('snapshot', 'late')});
my ($answer, $failed) = $reader->query(q{SELECT inbox.claim('snapshot', 'late')});
is($reader->{stderr} . $answer, 'f',
	'REPEATABLE READ, the marker\'s worker not reached yet: false, the copy is seen');
$reader->query('ROLLBACK');
$reader->quit;

# The same when the transaction had reached the marker's worker before the copy committed.
$reader = $coordinator->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$reader->query_safe('SELECT count(*) FROM inbox.markers');
$coordinator->safe_psql('postgres', q{SELECT inbox.claim('snapshot', 'later')});
($answer, $failed) = $reader->query(q{SELECT inbox.claim('snapshot', 'later')});
like($reader->{stderr}, qr/could not serialize access/,
	'REPEATABLE READ, worker reached before: a serialization failure, as on one node');
$reader->quit;

$_->stop for @{ $cluster->{nodes} };
done_testing();
