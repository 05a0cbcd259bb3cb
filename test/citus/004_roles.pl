# A claim by an application role (EXECUTE on the functions, no privilege on the marker table)
# costs what the same claim costs the table's owner: a marker and a business row on one worker
# commit over one connection, without two-phase commit, co-located or not.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('roles', 'citus.recover_2pc_interval = -1');
my $coordinator = $cluster->{coordinator};

distribute_table($cluster, 'inbox.messages', 'message_id');
$coordinator->safe_psql('postgres', q{
    CREATE ROLE app LOGIN;
    GRANT USAGE ON SCHEMA inbox TO app;
    GRANT EXECUTE ON FUNCTION inbox.claim(text, text) TO app;
    -- co-located with the markers: the same key, type and collation
    CREATE TABLE invoices (id text COLLATE "C" PRIMARY KEY, paid int NOT NULL DEFAULT 0);
    -- the same shard count and key, in a co-location group of its own
    CREATE TABLE ledger (id text COLLATE "C" PRIMARY KEY, amount int NOT NULL DEFAULT 0);
});
distribute_table($cluster, 'invoices', 'id', colocate_with => 'inbox.messages');
distribute_table($cluster, 'ledger', 'id', colocate_with => 'none');
$coordinator->safe_psql('postgres', q{
    INSERT INTO invoices SELECT 'k-' || g FROM generate_series(1, 20) g;
    INSERT INTO ledger SELECT 'k-' || g FROM generate_series(1, 20) g;
    GRANT SELECT, UPDATE ON invoices, ledger TO app;
});

# Keys whose marker shard and ledger shard are on the same worker.
my @keys = grep { shard_node($cluster, 'inbox.messages', $_) eq shard_node($cluster, 'ledger', $_) }
  map { "k-$_" } 1 .. 20;
cmp_ok(scalar(@keys), '>=', 4, 'keys whose marker and ledger row share a worker');

# Runs $sql in one transaction as $role, from the coordinator: the error ('' for none) and the
# number of transactions Citus prepared for it.
sub transaction_as
{
	my ($role, $sql) = @_;
	my $session = $coordinator->background_psql('postgres', on_error_stop => 0,
		extra_params => [ '-U', $role ]);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	$session->query("BEGIN;\n$sql;\nCOMMIT;");
	my $error = $session->{stderr};
	$session->quit;
	return ($error, remote_prepares($cluster, $pid));
}

my ($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles', '$keys[0]')});
is("$error|$prepares", '|0', 'application role, a claim alone: one connection, no 2PC');

($error, $prepares) = transaction_as('postgres', qq{SELECT inbox.claim('roles', '$keys[1]');
    UPDATE invoices SET paid = paid + 1 WHERE id = '$keys[1]'});
is("$error|$prepares", '|0', 'table owner, claim and co-located write: one connection, no 2PC');

($error, $prepares) = transaction_as('postgres', qq{SELECT inbox.claim('roles', '$keys[2]');
    UPDATE ledger SET amount = amount + 1 WHERE id = '$keys[2]'});
is("$error|$prepares", '|0', 'table owner, claim and a write on the same worker: no 2PC');

TODO:
{
	local $TODO =
	  'issue 11 (4): the claim writes as the marker table\'s owner, over a connection of its own';
	($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles-app', '$keys[1]');
        UPDATE invoices SET paid = paid + 1 WHERE id = '$keys[1]'});
	is($error, '', 'application role, claim and co-located write: the transaction commits');

	($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles', '$keys[3]');
        UPDATE ledger SET amount = amount + 1 WHERE id = '$keys[3]'});
	is("$error|$prepares", '|0', 'application role, claim and a write on the same worker: no 2PC');
}
is( $coordinator->safe_psql('postgres',
		qq{SELECT amount || '|' || (SELECT count(*) FROM inbox.messages WHERE message_id = '$keys[3]')
		   FROM ledger WHERE id = '$keys[3]'}),
	'1|1', 'the application role\'s marker and ledger write committed together');

$_->stop for @{ $cluster->{nodes} };
done_testing();
