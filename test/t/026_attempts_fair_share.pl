# The table of failed attempts (inbox.max_failed_messages, all databases together) is shared
# fairly between consumers: one consumer's failures never evict another consumer's counts while
# that consumer holds no more than its fair share, and each eviction is counted against the
# consumer that lost its count (inbox.stats, attempts_evicted). A consumer alone past the limit
# evicts its own oldest. The counts, the shares and the evictions survive a clean restart (and a
# start with a smaller table shares it alike), and the counters saved by the library of 1.1 and
# 1.2 are read back by this one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('fair_share', 'inbox.max_failed_messages = 100');
is($node->safe_psql('postgres', 'SHOW inbox.max_failed_messages'),
	'100', 'the smallest table: 100 messages');
$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE ROLE billing_service;
    CREATE ROLE orders_service;
    SELECT inbox.grant_access('billing_service', 'consume');
    SELECT inbox.grant_access('orders_service', 'consume');
    SELECT inbox.configure_consumer('billing', max_attempts => 1, owner => 'billing_service');
    SELECT inbox.configure_consumer('orders', owner => 'orders_service');
});

sub kept
{
	my ($consumer) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM inbox.attempts WHERE consumer = '$consumer'");
}

sub evicted
{
	my ($consumer) = @_;
	return $node->safe_psql('postgres',
		"SELECT attempts_evicted FROM inbox.stats WHERE consumer = '$consumer'");
}

# Failures of $count messages of $consumer, from $first on, as $role: each in a transaction of
# its own that claims and rolls back, one session for them all.
sub fail_messages
{
	my ($role, $consumer, $prefix, $first, $count) = @_;
	my $script = "SET ROLE $role;\n";
	$script .= "BEGIN; SELECT inbox.claim('$consumer', '$prefix-$_'); ROLLBACK;\n"
	  for $first .. $first + $count - 1;
	$node->safe_psql('postgres', $script);
	return;
}

sub billing_outcome
{
	return $node->safe_psql('postgres', q{
        SET ROLE billing_service;
        SELECT outcome || ' ' || attempts FROM inbox.receive('billing', 'invoice-1')});
}

# Alone past the limit, a consumer evicts its own least recent failures, and they are counted.
# (Registered, so that forget finds it and clears its failures.)
$node->safe_psql('postgres', q{SELECT inbox.configure_consumer('solo')});
fail_messages('postgres', 'solo', 's', 1, 120);
is( $node->safe_psql('postgres',
		q{SELECT count(*) || ' ' || min(substr(message_id, 3)::int) || ' ' || max(substr(message_id, 3)::int)
          FROM inbox.attempts WHERE consumer = 'solo'}),
	'100 21 120',
	'a consumer alone past the limit: its 100 most recent failures are kept');
is(evicted('solo'), 20, 'its 20 evictions are counted against it');
$node->safe_psql('postgres',
	q{SELECT count(inbox.forget('solo', 's-' || g)) FROM generate_series(1, 120) g});
is($node->safe_psql('postgres', 'SELECT count(*) FROM inbox.attempts'),
	0, 'forget empties the table');

# billing's message fails once: with max_attempts 1, it is poisoned.
fail_messages('billing_service', 'billing', 'invoice', 1, 1);
is(billing_outcome(), 'poisoned 1', "billing's message is poisoned");

# Another service, which may consume only its own consumer, fails 150 of its messages.
my ($rc, $out, $err) = $node->psql('postgres',
	q{SET ROLE orders_service; SELECT inbox.claim('billing', 'invoice-1')});
like($err, qr/permission denied for consumer "billing"/,
	'orders_service may not consume billing');
fail_messages('orders_service', 'orders', 'o', 1, 150);
is(billing_outcome(), 'poisoned 1',
	"150 failures of another consumer: billing's message is still poisoned");
is(kept('orders'), 99, 'orders keeps the rest of the table: 99 messages');
is( $node->safe_psql('postgres',
		q{SELECT min(substr(message_id, 3)::int) FROM inbox.attempts WHERE consumer = 'orders'}),
	52, 'its most recent ones: it evicted its own oldest');
is(evicted('orders'), 51, 'orders lost 51 counts, counted against it');
is(evicted('billing'), 0, 'billing lost none');

# The counts, the shares and the evictions survive a clean restart, groups rebuilt: orders
# failing more still evicts only its own.
$node->restart;
is(kept('orders') . ' ' . kept('billing'), '99 1', 'a clean restart keeps every count');
is(evicted('orders') . ' ' . evicted('billing'), '51 0', 'and the evictions counted');
fail_messages('orders_service', 'orders', 'o', 151, 150);
is(billing_outcome(), 'poisoned 1',
	"after the restart, 150 more failures of orders: billing's message is still poisoned");
is(kept('orders'), 99, 'orders still keeps 99 messages');
is(evicted('orders') . ' ' . evicted('billing'), '201 0', 'orders lost 150 more counts');

# A third consumer that fails much takes its fair share from the largest: orders (99) gives up
# its oldest until the two hold as many, and billing's one message stays.
fail_messages('postgres', 'bulk', 'b', 1, 100);
is( kept('orders') . ' ' . kept('bulk') . ' ' . kept('billing'),
	'49 50 1', 'two consumers that fail much share the table; billing keeps its one message');
is(evicted('orders') . ' ' . evicted('bulk') . ' ' . evicted('billing'),
	'251 50 0', 'each eviction counted against the consumer that lost the count');
is(billing_outcome(), 'poisoned 1', "billing's message is still poisoned");
is($node->safe_psql('postgres', 'SELECT count(*) FROM inbox.attempts'),
	100, 'the table stays bounded');

my $segments = $node->safe_psql('postgres',
	q{SELECT sum(allocated_size) FROM pg_shmem_allocations
      WHERE name IN ('inbox_attempts', 'inbox attempts hash', 'inbox attempt groups hash')});
note("shared memory for 100 messages: $segments bytes");

# The counters saved by the library of 1.1 and 1.2 (version 2 of inbox_stats.stat: no
# attempts_evicted) are read back by this one. The file of this library is rewritten as that
# one would have written it: each entry without its last counter.
$node->stop;
my $file = $node->data_dir . '/pg_stat/inbox_stats.stat';
open(my $in, '<:raw', $file) or die "$file: $!";
my $saved = do { local $/; <$in> };
close($in);
my ($magic, $version, $counting_since, $count) = unpack('L L q l', $saved);
is($version, 3, 'the counters are saved in version 3');
# An entry: the key (database oid and 65 bytes of name, padded to 72), 7 counters, reset_at.
my $entry_size = 72 + 7 * 8 + 8;
is(length($saved), 20 + $count * $entry_size, 'of the expected size');
my $old = pack('L L q l', $magic, 2, $counting_since, $count);
for my $i (0 .. $count - 1)
{
	my $entry = substr($saved, 20 + $i * $entry_size, $entry_size);
	$old .= substr($entry, 0, 72 + 6 * 8) . substr($entry, 72 + 7 * 8, 8);
}
open(my $out_file, '>:raw', $file) or die "$file: $!";
print $out_file $old;
close($out_file);
$node->start;
is( $node->safe_psql('postgres',
		q{SELECT poisoned || ' ' || attempts_evicted FROM inbox.stats WHERE consumer = 'billing'}),
	'4 0', 'counters saved in version 2 are read back, without evictions');
is(evicted('orders'), 0, 'which that version did not count');
$node->stop;

# Beyond inbox.max_consumers, a consumer's evictions are counted in the database's row (NULL
# consumer), as its claims are.
my $few = inbox_node('few_consumers',
	"inbox.max_failed_messages = 100\ninbox.max_consumers = 1");
$few->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    SELECT inbox.claim('tracked', 'm-1');
    SELECT inbox.configure_consumer('untracked');
    DO $$ BEGIN FOR i IN 1 .. 101 LOOP BEGIN
        PERFORM inbox.claim('untracked', 'u-' || i); RAISE EXCEPTION 'fail';
    EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$;
});
is( $few->safe_psql('postgres', q{
        SELECT string_agg(coalesce(consumer, '(untracked)') || ':'
                          || coalesce(attempts_evicted::text, '-'), ' '
                          ORDER BY consumer NULLS LAST) FROM inbox.stats}),
	'tracked:0 untracked:- (untracked):1',
	'an untracked consumer\'s eviction is counted in the database\'s row');
$few->stop;

# A start with a lowered inbox.max_failed_messages shares what it restores as failures share
# the table, and counts what it forgets.
my $lowered = inbox_node('lowered', 'inbox.max_failed_messages = 200');
$lowered->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    SELECT inbox.configure_consumer('wide'), inbox.configure_consumer('narrow');
    DO $$ BEGIN FOR i IN 1 .. 150 LOOP BEGIN
        PERFORM inbox.claim('wide', 'w-' || i); RAISE EXCEPTION 'fail';
    EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$;
    DO $$ BEGIN FOR i IN 1 .. 50 LOOP BEGIN
        PERFORM inbox.claim('narrow', 'n-' || i); RAISE EXCEPTION 'fail';
    EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$;
});
$lowered->stop;
$lowered->append_conf('postgresql.conf', 'inbox.max_failed_messages = 100');
$lowered->start;
is( $lowered->safe_psql('postgres', q{
        SELECT string_agg(consumer || ':' || kept || ':' || first || ':' || evicted, ' '
                          ORDER BY consumer)
        FROM (SELECT a.consumer, count(*) AS kept, min(substr(a.message_id, 3)::int) AS first,
                     (SELECT s.attempts_evicted FROM inbox.stats s
                      WHERE s.consumer = a.consumer) AS evicted
              FROM inbox.attempts a GROUP BY a.consumer) k}),
	'narrow:50:1:0 wide:50:101:100',
	'restored into a smaller table: a fair share each, the latest failures, evictions counted');
$lowered->stop;

done_testing();
