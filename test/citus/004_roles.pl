# What a claim by an application role (EXECUTE on the functions, no privilege on the markers)
# costs on Citus. The claim writes the marker as the owner of the markers, and Citus keeps one
# connection per node and user: the owner's connection and the role's own are two. So a claim
# alone, or the owner's claim beside its own writes on one worker, commits over one connection;
# the role's claim beside its writes on the same worker commits over two, with two-phase commit,
# and Citus refuses the role's write to a shard co-located with a marker written in the same
# transaction. A function delegated to the marker's worker runs both there, over the role's one
# connection: the way to keep the work and the marker on one node without two-phase commit.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CitusTest;

my $cluster = citus_cluster('roles', 'citus.recover_2pc_interval = -1');
my $coordinator = $cluster->{coordinator};

distribute_inbox($cluster);
$coordinator->safe_psql('postgres', q{
    CREATE ROLE app LOGIN;
    -- on every node: Citus copies no GRANT on an extension's functions to the workers
    SELECT inbox.grant_access('app', 'consume');
    -- co-located with the markers: keyed by the stored form of the message id
    CREATE TABLE payments (message_key bytea PRIMARY KEY, paid int NOT NULL DEFAULT 0);
    -- keyed by the message id as text, in a co-location group of its own
    CREATE TABLE ledger (id text PRIMARY KEY, amount int NOT NULL DEFAULT 0);
});
distribute_table($cluster, 'payments', 'message_key', colocate_with => 'inbox.markers');
distribute_table($cluster, 'ledger', 'id');
$coordinator->safe_psql('postgres', q{
    INSERT INTO payments SELECT inbox.message_key('k-' || g) FROM generate_series(1, 40) g;
    INSERT INTO ledger SELECT 'k-' || g FROM generate_series(1, 40) g;
    GRANT SELECT, UPDATE ON payments, ledger TO app;
    SELECT inbox.configure_consumer('roles');
});
is( join(' ', on_nodes($cluster,
	q{SELECT has_function_privilege('app', 'inbox.claim(text, text)', 'EXECUTE')})),
	't t t', 'inbox.grant_access on the coordinator grants on every node');
is( join(' ', on_nodes($cluster,
	q{SELECT has_function_privilege('app', 'inbox.message_key(text)', 'EXECUTE')})),
	't t t', 'consume access includes inbox.message_key, on every node');

# Keys whose marker and ledger row share a worker.
my @keys = grep { marker_node($cluster, $_) eq shard_node($cluster, 'ledger', "'$_'") }
  map { "k-$_" } 1 .. 40;
cmp_ok(scalar(@keys), '>=', 6, 'keys whose marker and ledger row share a worker');

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

sub committed
{
	my ($key) = @_;
	return $coordinator->safe_psql('postgres', qq{
		SELECT (SELECT count(*) FROM inbox.markers WHERE message_key = inbox.message_key('$key'))
		       || '|' || (SELECT amount FROM ledger WHERE id = '$key')
		       || '|' || (SELECT paid FROM payments WHERE message_key = inbox.message_key('$key'))});
}

# The first claim of a new consumer also registers it, in its own transaction: a write to the
# registry, a reference table on every node, which Citus commits in two phases.
my ($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles-new', '$keys[0]')});
is("$error|" . ($prepares > 0 ? 'prepared' : 'none'), '|prepared',
	'the first claim of a new consumer: two-phase commit, for the registry');

($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles', '$keys[0]')});
is("$error|$prepares", '|0', 'application role, a claim alone: one connection, no 2PC');

($error, $prepares) = transaction_as('postgres', qq{SELECT inbox.claim('roles', '$keys[1]');
    UPDATE payments SET paid = paid + 1 WHERE message_key = inbox.message_key('$keys[1]')});
is("$error|$prepares", '|0', 'table owner, claim and co-located write: one connection, no 2PC');

($error, $prepares) = transaction_as('postgres', qq{SELECT inbox.claim('roles', '$keys[2]');
    UPDATE ledger SET amount = amount + 1 WHERE id = '$keys[2]'});
is("$error|$prepares", '|0', 'table owner, claim and a write on the same worker: no 2PC');

($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles', '$keys[3]');
    UPDATE ledger SET amount = amount + 1 WHERE id = '$keys[3]'});
is("$error|$prepares", '|2',
	'application role, claim and a write on the same worker: two connections, two-phase commit');
is(committed($keys[3]), '1|1|0', 'the marker and the ledger write committed together');

($error, $prepares) = transaction_as('app', qq{SELECT inbox.claim('roles', '$keys[4]');
    UPDATE payments SET paid = paid + 1 WHERE message_key = inbox.message_key('$keys[4]')});
like($error, qr/cannot perform query on placements that were modified in this transaction by a different user/,
	'application role, claim and a co-located write: Citus refuses the second user on the shard');
is(committed($keys[4]), '0|0|0', 'and nothing of that transaction was written');

# The unit of work as a function that Citus delegates to the worker of the message's marker
# (and of its payment): the claim and the payment run there, over the role's one connection.
# The role computes the key on the coordinator, and the function checks it on the worker: both
# with inbox.message_key, which consume access grants on every node.
$coordinator->safe_psql('postgres', q{
    CREATE FUNCTION pay(key bytea, message_id text) RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
        IF key IS DISTINCT FROM inbox.message_key(message_id) THEN
            RAISE EXCEPTION 'the key is not the stored form of %', message_id;
        END IF;
        IF NOT inbox.claim('roles', message_id) THEN
            RETURN false;
        END IF;
        UPDATE payments SET paid = paid + 1 WHERE message_key = key;
        RETURN true;
    END $$;
    SELECT create_distributed_function('pay(bytea, text)', 'key', colocate_with := 'inbox.markers');
    GRANT EXECUTE ON FUNCTION pay(bytea, text) TO app;
});
my (undef, $output, $messages) = $coordinator->psql('postgres', qq{
    SELECT pg_backend_pid();
    SET client_min_messages = debug1;
    SELECT pay(inbox.message_key('$keys[5]'), '$keys[5]');
    RESET client_min_messages;
    SELECT pay(inbox.message_key('$keys[5]'), '$keys[5]')}, extra_params => [ '-U', 'app' ]);
my ($pid, @answers) = split /\n/, $output;
is("@answers", 't f', 'application role, a delegated function: processed, then a duplicate');
like($messages, qr/pushing down the function call/, 'Citus ran it on the worker');
is(committed($keys[5]), '1|0|1', 'the marker and the payment committed, once');
is(remote_prepares($cluster, $pid), '0', 'without two-phase commit');
is( join(' ', map { $_->safe_psql('postgres', 'SELECT count(*) FROM pg_dist_transaction') }
		  @{ $cluster->{workers} }),
	'0 0', 'nor one that the worker started itself');

# Consumers owned by a role: the registry is a reference table, so every node knows the owner
# (by the role's name: its OID differs from node to node), and a claim is refused to another role
# on the coordinator as on the worker that runs a delegated function.
$coordinator->safe_psql('postgres', q{
    CREATE ROLE other_service LOGIN;
    SELECT inbox.grant_access('other_service', 'consume');
    GRANT EXECUTE ON FUNCTION pay(bytea, text) TO other_service;
    SELECT inbox.configure_consumer('roles', owner => 'app');
});
is( join(' ', on_nodes($cluster,
	q{SELECT owner FROM inbox.consumer_registry WHERE name = 'roles'})),
	'app app app', 'the owner on every node');

# Runs $sql as $role, outside a transaction block (where Citus delegates pay()), with Citus's
# debug messages: stdout and stderr.
sub call_as
{
	my ($role, $sql) = @_;
	my (undef, $stdout, $stderr) = $coordinator->psql('postgres',
		"SET client_min_messages = debug1; $sql", extra_params => [ '-U', $role ]);
	return ($stdout, $stderr);
}
my ($answer, $messages_of_call) = call_as('other_service', qq{SELECT inbox.claim('roles', '$keys[6]')});
like($messages_of_call, qr/permission denied for consumer "roles"/,
	'another role is refused on the coordinator');
($answer, $messages_of_call) =
  call_as('other_service', qq{SELECT pay(inbox.message_key('$keys[7]'), '$keys[7]')});
like($messages_of_call, qr/pushing down the function call.*permission denied for consumer "roles"/s,
	'and on the worker that runs a delegated function');
is(committed($keys[6]) . ' ' . committed($keys[7]), '0|0|0 0|0|0', 'nothing was written');
($answer) = call_as('app', qq{SELECT inbox.claim('roles', '$keys[6]')});
is($answer, 't', 'the owner claims on the coordinator');
($answer, $messages_of_call) = call_as('app', qq{SELECT pay(inbox.message_key('$keys[7]'), '$keys[7]')});
is($answer, 't', 'and on the worker');
like($messages_of_call, qr/pushing down the function call/, 'which ran it');
is(committed($keys[6]) . ' ' . committed($keys[7]), '1|0|0 1|0|1', 'and its markers are written');

$_->stop for @{ $cluster->{nodes} };
done_testing();
