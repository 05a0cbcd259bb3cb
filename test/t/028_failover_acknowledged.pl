# A consumer acknowledges a message once its COMMIT returned, and the broker never delivers it
# again: the message is then only as durable as the node that survives a failover
# (docs/operations.md, "Standbys and failover").
#
# Synchronous replication (synchronous_standby_names = 'ANY 1 (standby)', synchronous_commit =
# on): every payment of a batch whose COMMIT returned on the primary is a duplicate on the standby
# promoted after an immediate stop of the primary, although the standby had replayed none of
# them (a COMMIT waits for the standby's flush, and a promotion replays what was flushed). A wait
# that is cancelled returns the COMMIT with a warning, committed on the primary alone, and that
# payment is not on the promoted standby.
#
# Asynchronous replication: a standby that stopped receiving is promoted without the payments the
# primary acknowledged after that; those that reached it are duplicates there.
#
# The lag is made, not hoped for: replay paused, the walreceiver stopped; no sleep.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $schema = q{
	CREATE EXTENSION inbox;
	CREATE TABLE payments (message_id text PRIMARY KEY, amount numeric NOT NULL);
	CREATE FUNCTION record_payment(payload jsonb) RETURNS void LANGUAGE sql AS $$
		INSERT INTO payments VALUES (payload ->> 'id', (payload ->> 'amount')::numeric)
	$$;
};

# The SQL of one delivery of payment $n (pay-$n, amount $n).
sub delivery
{
	my ($n) = @_;
	return "SELECT inbox.apply('payments', 'pay-$n', 'record_payment(jsonb)', "
	  . "'{\"id\": \"pay-$n\", \"amount\": $n}');\n";
}

# Delivers payments $first .. $last one after the other in one session, each in a transaction of
# its own, as a consumer commits and acknowledges them: one answer per COMMIT that returned.
sub deliver
{
	my ($node, $first, $last) = @_;
	return $node->safe_psql('postgres', join('', map { delivery($_) } $first .. $last));
}

# Delivers payments $first .. $last again; returns how many were duplicates.
sub duplicates_among_redeliveries
{
	my ($node, $first, $last) = @_;
	my @answers = split /\n/, deliver($node, $first, $last);
	return scalar grep { $_ eq 'f' } @answers;
}

sub payments_between
{
	my ($node, $first, $last) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || ' payments, ' || coalesce(sum(amount), 0) FROM payments "
		  . "WHERE substr(message_id, 5)::int BETWEEN $first AND $last");
}

# --- Synchronous replication ---

my $primary = inbox_node('sync_primary', "inbox.purge_worker = off\n", allows_streaming => 1);
$primary->safe_psql('postgres', $schema);
$primary->backup('sync_backup');
# The standby's walreceiver connects with its cluster_name, the node's name, as application_name.
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'sync_backup', has_streaming => 1);
$standby->start;
$primary->append_conf('postgresql.conf', qq{
synchronous_standby_names = 'ANY 1 (standby)'
synchronous_commit = on
});
$primary->reload;
$primary->poll_query_until('postgres',
	q{SELECT sync_state = 'quorum' FROM pg_stat_replication WHERE application_name = 'standby'})
  or die 'the standby did not become synchronous';

# The standby lags as far as it can while the primary's commits go on: it replays nothing.
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$standby->poll_query_until('postgres', q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
  or die 'the standby did not pause its replay';

is(deliver($primary, 1, 100), join("\n", ('t') x 100),
	'synchronous: 100 payments processed in quick succession, every COMMIT returned (acknowledged)');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM payments'), '0',
	'the standby has replayed none of them: a COMMIT waited for its flush, not its replay');

# The standby stops receiving: its walreceiver, ended, is not started again while replay is
# paused. A COMMIT then waits; cancelled, the wait ends with a warning and the COMMIT returns,
# the transaction committed on the primary only.
my $walreceiver = $standby->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
ok(kill('TERM', $walreceiver), 'the standby\'s walreceiver is stopped');
$primary->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_replication')
  or die 'the standby is still connected';
my $waiting = $primary->background_psql('postgres', on_error_stop => 0);
$waiting->query_until(qr/sent/, "\\echo sent\n" . delivery(101));
$primary->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'})
  or die 'the COMMIT of payment 101 is not waiting for the standby';
$primary->safe_psql('postgres',
	q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'});
my $answer = $waiting->query(q{SELECT 'returned'});
is($answer, "t\nreturned", 'a cancelled wait returns the COMMIT of payment 101');
like($waiting->{stderr}, qr/WARNING:  canceling wait for synchronous replication/,
	'with a warning that it might not have reached the standby');
$waiting->quit;

$primary->stop('immediate');
$standby->promote;
is(payments_between($standby, 1, 100), '100 payments, 5050',
	'after the failover, the promoted standby has every payment whose COMMIT returned normally');
is(duplicates_among_redeliveries($standby, 1, 100), 100,
	'and each redelivery is a duplicate there: none lost, none applied twice');
is(payments_between($standby, 1, 100), '100 payments, 5050', 'the payments are unchanged');
is(payments_between($standby, 101, 101), '0 payments, 0',
	'the payment whose wait was cancelled is not there: its acknowledgement would lose it');
$standby->stop;

# --- Asynchronous replication ---

my $async_primary = inbox_node('async_primary', "inbox.purge_worker = off\n", allows_streaming => 1);
$async_primary->safe_psql('postgres', $schema);
$async_primary->backup('async_backup');
my $async_standby = PostgreSQL::Test::Cluster->new('async_standby');
$async_standby->init_from_backup($async_primary, 'async_backup', has_streaming => 1);
$async_standby->start;

is(deliver($async_primary, 1, 50), join("\n", ('t') x 50),
	'asynchronous: 50 payments processed and acknowledged');
$async_primary->wait_for_catchup($async_standby);

# The standby stops receiving (a network partition, a standby far behind): without its
# primary_conninfo the walreceiver ends and is not started again.
$async_standby->append_conf('postgresql.conf', "primary_conninfo = ''\n");
$async_standby->reload;
$async_standby->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
  or die 'the walreceiver did not stop';

is(deliver($async_primary, 51, 100), join("\n", ('t') x 50),
	'50 more processed, each COMMIT returning at once without the standby (acknowledged)');
$async_primary->stop('immediate');
$async_standby->promote;
is(payments_between($async_standby, 1, 50), '50 payments, 1275',
	'after the failover, the payments that reached the standby are there');
is(duplicates_among_redeliveries($async_standby, 1, 50), 50,
	'and each of their redeliveries is a duplicate');
is(payments_between($async_standby, 51, 100), '0 payments, 0',
	'the 50 acknowledged after the standby stopped receiving are gone: lost, since an '
	  . 'acknowledged message is not delivered again');
is( $async_standby->safe_psql(
		'postgres',
		q{SELECT count(*) FROM inbox.messages
		  WHERE consumer = 'payments' AND substr(message_id, 5)::int > 50}),
	'0',
	'and so are their markers: a redelivery would be processed as new');
$async_standby->stop;

done_testing();
