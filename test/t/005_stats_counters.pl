# inbox.stats counters are exact across concurrent sessions (commits, duplicates, savepoint
# rollbacks and rollbacks mixed), survive a clean restart (pg_ctl restart), are lost by a crash,
# and count a prepared transaction's claims when it is prepared.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('stats', "max_prepared_transactions = 2\nrestart_after_crash = on");

$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE TABLE answers (answer boolean NOT NULL);
    CREATE SEQUENCE unique_ids;
});

# 4 clients, 2,000 transactions. Every claim of 'load' that commits logs its answer; the claims
# of 'load-undone' are all rolled back, to a savepoint or with their transaction.
$node->pgbench(
    '--no-vacuum --client=4 --jobs=2 --transactions=500',
    0,
    [qr/number of transactions actually processed: 2000/],
    [qr/^$/],
    'mixed claims from 4 clients',
    {
        'claim@2' => q{
\set id random(1, 1500)
INSERT INTO answers SELECT inbox.claim('load', 'm-' || :id);
},
        'savepoint@1' => q{
\set id random(1, 1500)
BEGIN;
SAVEPOINT s;
SELECT inbox.claim('load-undone', 'u-' || nextval('unique_ids'));
ROLLBACK TO SAVEPOINT s;
INSERT INTO answers SELECT inbox.claim('load', 'm-' || :id);
COMMIT;
},
        'rollback@1' => q{
BEGIN;
SELECT inbox.claim('load-undone', 'r-' || nextval('unique_ids'));
ROLLBACK;
}
    });

my $expected = $node->safe_psql('postgres', q{
    SELECT count(*) FILTER (WHERE answer) || '|' || count(*) FILTER (WHERE NOT answer)
    FROM answers});
my ($applied, $duplicates) = split /\|/, $expected;
cmp_ok($duplicates, '>', 0, "the run produced duplicates ($duplicates)");
my $counts = q{SELECT applied || '|' || duplicates || '|' || retained
               FROM inbox.stats WHERE consumer = 'load'};
is($node->safe_psql('postgres', $counts), "$applied|$duplicates|$applied",
    'applied and duplicates exactly as answered; one marker per applied claim');
is($node->safe_psql('postgres',
    q{SELECT count(*) FROM inbox.stats_counters() WHERE consumer LIKE 'load-undone'}),
    '0', 'rolled-back claims are not counted');

# A prepared transaction counts when prepared.
$node->safe_psql('postgres', q{
    BEGIN;
    SELECT inbox.claim('prepared', 'p-1');
    PREPARE TRANSACTION 'claim-p-1';
});
is($node->safe_psql('postgres', q{SELECT applied FROM inbox.stats_counters()
                                  WHERE consumer = 'prepared'}), '1', 'counted at PREPARE');
$node->safe_psql('postgres', q{COMMIT PREPARED 'claim-p-1'});

my $before = $node->safe_psql('postgres', q{
    SELECT string_agg(consumer || ':' || applied || ':' || duplicates || ':'
                      || coalesce(last_duplicate_at::text, '-') || ':' || stats_reset, ' '
                      ORDER BY consumer)
    FROM inbox.stats});

# A clean restart keeps every counter, the reset time and the last duplicate's time.
$node->restart;
is($node->safe_psql('postgres', q{
    SELECT string_agg(consumer || ':' || applied || ':' || duplicates || ':'
                      || coalesce(last_duplicate_at::text, '-') || ':' || stats_reset, ' '
                      ORDER BY consumer)
    FROM inbox.stats}), $before, 'counters survive a clean restart');
ok(!-e $node->data_dir . '/pg_stat/inbox_stats.stat',
    'the saved counters are removed once loaded');

# Counting goes on from the restored values, and a reset after a restart zeroes them.
$node->safe_psql('postgres', q{SELECT inbox.claim('load', 'new-after-restart')});
is($node->safe_psql('postgres', q{SELECT applied FROM inbox.stats WHERE consumer = 'load'}),
    $applied + 1, 'counting continues from the restored counters');
# A reset is the database's own: another database keeps its counters and its reset time.
$node->safe_psql('postgres', 'CREATE DATABASE neighbour');
$node->safe_psql('neighbour', q{
    CREATE EXTENSION inbox;
    SELECT inbox.claim('next-door', 'n-1'), inbox.claim('next-door', 'n-1');
});
my $neighbour = q{SELECT applied || '|' || duplicates || '|' || stats_reset
                  FROM inbox.stats WHERE consumer = 'next-door'};
my $neighbour_before = $node->safe_psql('neighbour', $neighbour);
like($neighbour_before, qr/^1\|1\|/, 'the other database counts its own claims');
$node->safe_psql('postgres', q{SELECT inbox.stats_reset()});
is($node->safe_psql('neighbour', $neighbour), $neighbour_before,
    'a reset in one database leaves the counters of another');
$node->restart;
# Rows: load and prepared; not load-undone, whose registration went with its claims, none of
# which committed.
my $totals = q{SELECT count(*) || '|' || sum(applied) || '|' || sum(duplicates) FROM inbox.stats};
is($node->safe_psql('postgres', $totals), '2|0|0',
    'zero after reset, and still zero after a restart');

# A crash loses the counters (as PostgreSQL's own statistics): they restart from zero, whether a
# backend dies (the postmaster reinitialises shared memory) or the server stops in immediate mode.
$node->safe_psql('postgres',
    q{SELECT inbox.claim('load', 'new-after-restart'), inbox.claim('after', 'a-1')});
is($node->safe_psql('postgres', $totals), '3|1|1', 'counting before the crash');
crash_backend($node, $node->background_psql('postgres', on_error_stop => 0));
is($node->safe_psql('postgres', $totals), '3|0|0', 'a backend crash loses the counters');

$node->safe_psql('postgres',
    q{SELECT inbox.claim('load', 'new-after-restart'), inbox.claim('after', 'a-2')});
is($node->safe_psql('postgres', $totals), '3|1|1', 'counting again');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', $totals), '3|0|0', 'an immediate shutdown loses them too');

$node->stop;
done_testing();
