# Failed attempts (inbox.attempts) are kept where a rollback cannot undo them: counted across
# top-level and subtransaction rollbacks and across backends, kept by a clean restart, lost by a
# crash (as the counters are: docs/outcomes.md, "What a crash loses"); max_attempts makes receive answer
# poisoned and apply raise IB001 without running the handler; success and forget clear them; and
# inbox.max_failed_messages bounds them: when more messages fail than fit, the least recently
# failed ones are forgotten, each consumer keeping a fair share of the table
# (026_attempts_fair_share.pl).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('attempts',
	"inbox.max_failed_messages = 100\nrestart_after_crash = on");
$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE TABLE booked (message_id text);
    CREATE FUNCTION book(payload jsonb) RETURNS void LANGUAGE sql
        AS $$ INSERT INTO booked VALUES (payload ->> 'id') $$;
    CREATE FUNCTION book_or_fail(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO booked VALUES (payload ->> 'id');
        RAISE EXCEPTION 'card declined' USING ERRCODE = '22023';
    END $$;
});

sub failures
{
	my ($consumer, $message) = @_;
	return $node->safe_psql('postgres',
		"SELECT coalesce(max(failures), 0) FROM inbox.attempts "
		  . "WHERE consumer = '$consumer' AND message_id = '$message'");
}

# Each safe_psql is a backend of its own: the count is shared by all of them.
$node->safe_psql('postgres', q{BEGIN; SELECT inbox.claim('pay', 'm-1'); ROLLBACK;})
  for 1 .. 2;
is(failures('pay', 'm-1'), 2, 'two rolled-back transactions: two failed attempts');

$node->safe_psql('postgres', q{
    BEGIN;
    SAVEPOINT first;
    SELECT inbox.claim('pay', 'm-1');
    ROLLBACK TO SAVEPOINT first;
    SAVEPOINT second;
    SELECT inbox.claim('pay', 'm-2');
    RELEASE SAVEPOINT second;
    COMMIT;
});
is(failures('pay', 'm-1'), 3, 'a subtransaction rolled back is a failed attempt');
is(failures('pay', 'm-2'), 0, 'a released subtransaction that commits is not');

$node->psql('postgres',
	q{SELECT inbox.apply('pay', 'm-1', 'book_or_fail(jsonb)', '{"id": "m-1"}')});
is( $node->safe_psql('postgres',
		q{SELECT failures || ' ' || last_sqlstate || ' ' || last_message
          FROM inbox.attempts WHERE message_id = 'm-1'}),
	'4 22023 card declined',
	'a handler that raises: counted with its SQLSTATE and message');
is($node->safe_psql('postgres', 'SELECT count(*) FROM booked'),
	0, 'its work went with the rollback');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM inbox.messages WHERE message_id = 'm-1'}),
	0, 'and so did its marker');

# A clean restart keeps the count; the saved file is read once and removed.
$node->restart;
is(failures('pay', 'm-1'), 4, 'a clean restart keeps the failed attempts');
ok(!-e $node->data_dir . '/pg_stat/inbox_attempts.stat',
	'the saved attempts are removed once loaded');

# The limit: at max_attempts failures, receive answers poisoned and apply raises IB001, neither
# runs the handler nor writes a marker.
$node->safe_psql('postgres',
	q{SELECT inbox.configure_consumer('pay', max_attempts => 4)});
is( $node->safe_psql('postgres',
		q{SELECT outcome || ' ' || attempts FROM inbox.receive('pay', 'm-1')}),
	'poisoned 4',
	'receive: poisoned, with the count');
my ($rc, $out, $err) = $node->psql('postgres',
	q{SELECT inbox.apply('pay', 'm-1', 'book(jsonb)', '{"id": "m-1"}')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/IB001/, 'apply: SQLSTATE IB001');
like($err, qr/is poisoned: it failed 4 times/, 'apply: says why');
is($node->safe_psql('postgres', 'SELECT count(*) FROM booked'),
	0, 'the handler did not run');
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM inbox.messages WHERE message_id = 'm-1'}),
	0, 'no marker was written');
is( $node->safe_psql('postgres',
		q{SELECT poisoned FROM inbox.stats WHERE consumer = 'pay'}),
	2, 'inbox.stats counts both poisoned answers');

# Below the limit a message is delivered, told its earlier failures; its success clears them.
$node->safe_psql('postgres', q{BEGIN; SELECT inbox.claim('pay', 'm-3'); ROLLBACK;});
is( $node->safe_psql('postgres',
		q{SELECT outcome || ' ' || attempts FROM inbox.receive('pay', 'm-3')}),
	'processed 1',
	'below the limit: processed, with its earlier failure');
is(failures('pay', 'm-3'), 0, 'processed: its failures are cleared');

# forget clears them too, and the message can be tried again.
is($node->safe_psql('postgres', q{SELECT inbox.forget('pay', 'm-1')}),
	'f', 'forget of a message without a marker');
is(failures('pay', 'm-1'), 0, 'forget clears the failed attempts');
is( $node->safe_psql('postgres',
		q{SELECT inbox.apply('pay', 'm-1', 'book(jsonb)', '{"id": "m-1"}')}),
	't', 'after forget the message is handled again');

# The bound: 100 messages (inbox.max_failed_messages). When more fail, the least recently
# failed is forgotten, and a failure counts as recent: m-1 fails again last and stays.
$node->safe_psql('postgres',
	    q{DO $$ BEGIN FOR i IN 1 .. 100 LOOP BEGIN }
	  . q{PERFORM inbox.claim('bound', 'b-' || i); RAISE EXCEPTION 'fail'; }
	  . q{EXCEPTION WHEN OTHERS THEN NULL; END; END LOOP; END $$});
my $count_bound = q{SELECT count(*) FROM inbox.attempts WHERE consumer = 'bound'};
is($node->safe_psql('postgres', $count_bound), 100, 'a full table: 100 messages');
$node->safe_psql('postgres',
	q{BEGIN; SELECT inbox.claim('bound', 'b-1'); ROLLBACK;});
$node->safe_psql('postgres',
	q{BEGIN; SELECT inbox.claim('bound', 'b-101'); ROLLBACK;});
is($node->safe_psql('postgres', $count_bound), 100, 'still 100 messages');
is(failures('bound', 'b-2'), 0, 'the least recently failed message is forgotten');
is(failures('bound', 'b-1'), 2, 'a message that failed again is kept, with its count');
is(failures('bound', 'b-101'), 1, 'the new failure is kept');

# The order of recency survives a clean restart: the next to go is b-3.
$node->restart;
$node->safe_psql('postgres',
	q{BEGIN; SELECT inbox.claim('bound', 'b-102'); ROLLBACK;});
is(failures('bound', 'b-3'), 0, 'after a restart, the least recent goes next');
is(failures('bound', 'b-4'), 1, 'and only it');

# A transaction that claims more messages than the table holds, and rolls back: its consumer
# takes the table from the other one that fills it until they hold as many messages each, then
# keeps its own latest failures.
$node->safe_psql('postgres', q{
    BEGIN;
    SELECT count(*) FROM generate_series(1, 150) g WHERE inbox.claim('bulk', 'k-' || g);
    ROLLBACK;
});
is( $node->safe_psql('postgres',
		q{SELECT count(*) || ' ' || min(substr(message_id, 3)::int) || ' ' || max(substr(message_id, 3)::int)
          FROM inbox.attempts WHERE consumer = 'bulk'}),
	'50 101 150',
	'more failures than fit: the 50 most recent are kept, a fair share');
is($node->safe_psql('postgres', $count_bound), 50,
	'the other consumer keeps the other half');
is( $node->safe_psql('postgres',
		q{SELECT attempts_evicted FROM inbox.stats WHERE consumer = 'bound'}),
	52, 'its evictions are counted: 2 before the restart, 50 now');

my $segments = $node->safe_psql('postgres',
	q{SELECT sum(allocated_size) FROM pg_shmem_allocations
      WHERE name IN ('inbox_attempts', 'inbox attempts hash')});
note("shared memory for 100 messages: $segments bytes");

# A crash loses them: a backend killed (shared memory is reinitialised) or an immediate
# shutdown (crash recovery follows).
my $count_all = q{SELECT count(*) FROM inbox.attempts};
isnt($node->safe_psql('postgres', $count_all), 0, 'failures before the crash');
crash_backend($node, $node->background_psql('postgres', on_error_stop => 0));
is($node->safe_psql('postgres', $count_all), 0, 'a backend crash loses them');

$node->safe_psql('postgres', q{BEGIN; SELECT inbox.claim('pay', 'm-9'); ROLLBACK;});
is(failures('pay', 'm-9'), 1, 'counting again after the crash');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $count_all), 0, 'an immediate shutdown loses them too');

$node->stop;
done_testing();
