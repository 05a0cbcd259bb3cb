# A transaction that claims and sends takes part in a two-phase commit: it prepares (PostgreSQL
# refuses to prepare a transaction that executed NOTIFY, so the notification waits for a commit
# in the backend), and its prepared state survives a crash. Until COMMIT PREPARED, no relay takes
# its message, and a sender of the same key waits, as it waits for any sender of the key that has
# not ended: the key goes out in commit order. ROLLBACK PREPARED leaves neither message nor
# marker.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('outbox_prepared', "max_prepared_transactions = 2\n");
# (a consumer known before: the first claim of a new one registers it, and the prepared
# transaction would hold the registration)
$node->safe_psql('postgres',
	q{CREATE EXTENSION inbox; SELECT inbox.claim('billing', 'pay-0')});

$node->safe_psql('postgres', q{
	BEGIN;
	SELECT inbox.claim('billing', 'pay-1');
	SELECT inbox.send('orders', '"paid-1"', 'order-7');
	PREPARE TRANSACTION 'billing-pay-1';
	BEGIN;
	SELECT inbox.claim('billing', 'pay-2');
	SELECT inbox.send('orders', '"paid-2"', 'order-8');
	PREPARE TRANSACTION 'billing-pay-2';
});

$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', q{SELECT string_agg(gid, ' ' ORDER BY gid) FROM pg_prepared_xacts}),
	'billing-pay-1 billing-pay-2', 'both transactions are still prepared after a crash');
is($node->safe_psql('postgres', q{SELECT count(*) FROM inbox.relay_take('relay', 10)}),
	'0', 'no relay takes a message of a prepared transaction');

# A send of the same key waits for the prepared transaction, which holds the key's lock.
my $next = $node->background_psql('postgres', on_error_stop => 0);
$next->query_until(qr/started/, q{
	\echo started
	SELECT inbox.send('orders', '"shipped-7"', 'order-7');
});
$node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	WHERE wait_event_type = 'Lock' AND query LIKE '%shipped-7%' AND pid <> pg_backend_pid()})
  or die 'the second send of the key never waited';

$node->safe_psql('postgres', q{COMMIT PREPARED 'billing-pay-1'});
$next->query_safe('SELECT 1');    # the waiting send has returned
$next->quit;
$node->safe_psql('postgres', q{ROLLBACK PREPARED 'billing-pay-2'});

my @taken;
for (1 .. 3)
{
	push @taken, $node->safe_psql('postgres', q{
		WITH t AS (SELECT * FROM inbox.relay_take('relay', 10))
		SELECT coalesce(string_agg(t.payload #>> '{}' || '<-' || coalesce(o.cause_message_id, '-'),
			' '), 'none') || ':' || inbox.relay_done(coalesce(array_agg(t.id), '{}'))
		FROM t JOIN inbox.outbox o USING (id)});
}
is(join(' ', @taken), 'paid-1<-pay-1:1 shipped-7<--:1 none:0',
	'the committed message goes out with its cause, then the next of its key; the rolled back one never');
is($node->safe_psql('postgres',
		q{SELECT inbox.claim('billing', 'pay-1') || ':' || inbox.claim('billing', 'pay-2')}),
	'false:true', 'the committed claim holds, the rolled back one left no marker');

$node->stop;
done_testing();
