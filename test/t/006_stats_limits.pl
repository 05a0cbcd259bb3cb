# inbox.stats at its limits: more consumers than inbox.max_consumers (counted per database in a
# row with a NULL consumer, never an error or a warning on the claim), and no preload at all
# (the view works, its counters are NULL).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('few_consumers', 'inbox.max_consumers = 2');
$node->safe_psql('postgres', 'CREATE EXTENSION inbox; CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION inbox');

my $rows = q{SELECT string_agg(coalesce(consumer, '(untracked)') || ':'
                               || coalesce(applied::text, '-') || ':'
                               || coalesce(duplicates::text, '-') || ':'
                               || coalesce(retained::text, '-'), ' '
                               ORDER BY consumer NULLS LAST)
             FROM inbox.stats};

is($node->safe_psql('postgres', 'SHOW inbox.max_consumers'), '2', 'two consumers tracked');
my ($rc, $out, $err) = $node->psql('postgres', q{
    SELECT inbox.claim('first', 'm-1'), inbox.claim('second', 'm-1');
    SELECT inbox.claim('third', 'm-1'), inbox.claim('third', 'm-1'), inbox.claim('fourth', 'm-1');
});
is($rc, 0, 'claims beyond the limit succeed');
is($err, '', 'without an error or a warning');
is($node->safe_psql('postgres', $rows),
    'first:1:0:1 fourth:-:-:1 second:1:0:1 third:-:-:1 (untracked):2:1:-',
    'consumers beyond the limit are counted together; their own numbers are unknown');

# The limit is for the whole cluster; each database has its own untracked row.
$node->safe_psql('other', q{SELECT inbox.claim('elsewhere', 'm-1'), inbox.claim('elsewhere', 'm-1')});
is($node->safe_psql('other', $rows), 'elsewhere:-:-:1 (untracked):1:1:-',
    'another database counts in its own untracked row');
is($node->safe_psql('postgres', $rows),
    'first:1:0:1 fourth:-:-:1 second:1:0:1 third:-:-:1 (untracked):2:1:-',
    'and not in this one');

$node->restart;
is($node->safe_psql('postgres', $rows),
    'first:1:0:1 fourth:-:-:1 second:1:0:1 third:-:-:1 (untracked):2:1:-',
    'untracked counts survive a clean restart');

# A reset frees the database's slots: the next consumers get their own counters.
$node->safe_psql('postgres', 'SELECT inbox.stats_reset()');
is($node->safe_psql('postgres', $rows), 'first:0:0:1 fourth:0:0:1 second:0:0:1 third:0:0:1',
    'after a reset every consumer is at zero');
$node->safe_psql('postgres', q{SELECT inbox.claim('third', 'm-2'), inbox.claim('fourth', 'm-1')});
is($node->safe_psql('postgres', $rows), 'first:0:0:1 fourth:0:1:1 second:0:0:1 third:1:0:2',
    'the freed slots are taken by the next consumers');

my ($set_rc, $set_out, $set_err) = $node->psql('postgres', 'SET inbox.max_consumers = 10');
like($set_err, qr/cannot be changed without restarting the server/,
    'inbox.max_consumers is a postmaster setting');
$node->stop;

# Without the preload every function works, no worker runs and the view shows NULL counters.
my $plain = inbox_node('no_preload', '', preload => '');
$plain->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    SELECT inbox.claim('billing', 'm-1'), inbox.claim('billing', 'm-1'), inbox.claim('audit', 'm-1');
});
is($plain->safe_psql('postgres', q{
    SELECT string_agg(consumer || ':' || coalesce(applied::text, 'null') || ':'
                      || coalesce(duplicates::text, 'null') || ':'
                      || coalesce(duplicate_rate::text, 'null') || ':' || retained || ':'
                      || (oldest_processed_at IS NOT NULL) || ':'
                      || coalesce(last_duplicate_at::text, 'null') || ':'
                      || coalesce(stats_reset::text, 'null'), ' ' ORDER BY consumer)
    FROM inbox.stats}),
    'audit:null:null:null:1:true:null:null billing:null:null:null:1:true:null:null',
    'without the preload: NULL counters, markers still counted');
is($plain->safe_psql('postgres', 'SELECT count(*) FROM inbox.stats_counters()'), '0',
    'no counter rows');
($rc, $out, $err) = $plain->psql('postgres', 'SELECT inbox.stats_reset()');
like($err, qr/inbox statistics are not being collected/, 'stats_reset says why it cannot');

# The rest of the SQL interface works too; only the workers are absent.
is($plain->safe_psql('postgres', q{
    CREATE TABLE states (id int PRIMARY KEY, status text, version int);
    CREATE FUNCTION noop(jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
    SELECT inbox.apply('billing', 'm-2', 'noop(jsonb)', '{}')
           AND inbox.forget('billing', 'm-2')
           AND inbox.upsert_versioned('states', '{"id": 1, "status": "new", "version": 1}')
           AND inbox.insert_once('states', '{"id": 2}');
}), 't', 'without the preload: apply, forget, upsert_versioned and insert_once work');
$plain->safe_psql('postgres',
    q{UPDATE inbox.messages SET processed_at = now() - interval '1 hour' WHERE consumer = 'audit'});
is($plain->safe_psql('postgres', q{SET inbox.retention = '1min'; CALL inbox.purge()}), '1',
    'and CALL inbox.purge() follows inbox.retention');
is($plain->safe_psql('postgres', q{
    SELECT (SELECT count(*) FROM inbox.workers)
         + (SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inbox%')}), '0',
    'no purge worker runs');
$plain->stop;

done_testing();
