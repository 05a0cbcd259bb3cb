# inbox.messages as a Citus distributed table, used from the coordinator: claim, apply and forget
# answer as on one node, a concurrent copy waits for the first and answers right, a handler error
# takes the marker with it, a marker and a business row on different workers commit and roll back
# together, a session's kept plans follow the distribution, and pg_dump keeps the markers.
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
# the table to its shards.
my $early = $coordinator->background_psql('postgres');
is($early->query_safe(q{SELECT inbox.claim('replan', 'before')}), 't',
	'a claim before the distribution');

distribute_table($cluster, 'inbox.messages', 'message_id');
is(shard_placements($cluster, 'inbox.messages'), 'coordinator:0 worker1:2 worker2:2',
	'inbox.messages distributed by message_id over both workers');
$coordinator->safe_psql('postgres',
	q{SELECT truncate_local_data_after_distributing_table('inbox.messages')});

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

# A payment whose marker lands on the other worker than account 1.
my $account_node = shard_node($cluster, 'accounts', 1);
my ($payment) = grep { shard_node($cluster, 'inbox.messages', $_) ne $account_node }
  map { "pay-$_" } 1 .. 20;
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
is($coordinator->safe_psql('postgres', $marker), '0', 'and the marker went with the rollback');
is($coordinator->safe_psql('postgres', $balance), '0', 'as did the credit');

# Marker on one worker, account on the other: one transaction over two workers.
$coordinator->safe_psql('postgres', "BEGIN; $apply; ROLLBACK;");
is(marker_and_balance(),
	'0|0', 'rolled back: neither the marker nor the credit');

like( psql_error($coordinator, qq{BEGIN;
    SELECT inbox.claim('payments', '$payment');
    UPDATE accounts SET balance = balance + 2000000 WHERE id = 1;
    COMMIT;}),
	qr/^23514: /, 'the write on the account\'s worker fails after the marker was written');
is($coordinator->safe_psql('postgres', $marker), '0', 'and the marker on the other worker is gone');

my $session = $coordinator->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
is($session->query_safe($apply), 't', 'apply over two workers: processed');
is(marker_and_balance(),
	'1|100', 'the marker and the credit both committed');
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

# pg_dump of the coordinator's database writes every marker.
my $markers = $coordinator->safe_psql('postgres', 'SELECT count(*) FROM inbox.messages');
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/markers.sql";
$coordinator->command_ok(
	[ 'pg_dump', '--data-only', '--table=inbox.messages', '--file', $dump,
		'--dbname', $coordinator->connstr('postgres') ],
	'pg_dump of the marker table');
my ($rows) = slurp_file($dump) =~ /^COPY inbox\.messages [^\n]*\n(.*?)^\\\.$/ms;
is(scalar(() = ($rows // '') =~ /\n/g), $markers, "the dump holds all $markers markers");

# Co-location of the business rows with their markers: a business key is text in the database's
# collation, the marker table's columns are COLLATE "C".
$coordinator->safe_psql('postgres', 'CREATE TABLE invoices (id text PRIMARY KEY, paid boolean)');
TODO:
{
	local $TODO = 'issue 11 (6): co-location needs a COLLATE "C" business key';
	is( psql_error($coordinator,
			q{SELECT create_distributed_table('invoices', 'id', colocate_with := 'inbox.messages')}),
		'', 'a table keyed by text co-locates with inbox.messages');
}

# REPEATABLE READ: a copy committed after the transaction's snapshot is a serialization failure
# on one node (the snapshot cannot see the marker it conflicts with). On Citus a worker's
# snapshot is taken when the transaction first reaches that worker.
my $reader = $coordinator->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$reader->query_safe('SELECT count(*) FROM pg_class');
$coordinator->safe_psql('postgres', q{SELECT inbox.claim('snapshot', 'late')});
my ($answer, $failed) = $reader->query(q{SELECT inbox.claim('snapshot', 'late')});
$reader->query('ROLLBACK');
TODO:
{
	local $TODO = 'issue 11 (7): per-worker snapshots under REPEATABLE READ';
	like($reader->{stderr} . ($failed ? '' : "answered $answer"),
		qr/could not serialize access/,
		'REPEATABLE READ: a copy committed after the snapshot is a serialization failure');
}
$reader->quit;

# The same when the transaction had reached the marker's worker before the copy committed.
$reader = $coordinator->background_psql('postgres', on_error_stop => 0);
$reader->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ');
$reader->query_safe('SELECT count(*) FROM inbox.messages');
$coordinator->safe_psql('postgres', q{SELECT inbox.claim('snapshot', 'later')});
($answer, $failed) = $reader->query(q{SELECT inbox.claim('snapshot', 'later')});
like($reader->{stderr}, qr/could not serialize access/,
	'REPEATABLE READ, worker reached before: a serialization failure, as on one node');
$reader->quit;

$_->stop for @{ $cluster->{nodes} };
done_testing();
