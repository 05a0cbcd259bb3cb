# The monitoring recipe of docs/operations.md, as written there: the plain-SQL check for a
# stalled purge, the postgres_exporter query of the workers, and the alerts (promtool test
# rules), against four databases: one the workers purge, one exempt on purpose
# (inbox.purge_worker = off, as when pg_cron purges it), one whose purge fails, and one whose
# purge lock a session holds (a CALL inbox.purge() in a transaction left open), so that every
# worker gives way.
use strict;
use warnings;
use File::Temp qw(tempdir);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $doc = slurp_file('docs/operations.md');
my ($exporter_query) = $doc =~ /\npg_inbox_workers:\n.*?  query: \|\n(.*?)\n  metrics:/s
  or die 'no pg_inbox_workers query in docs/operations.md';
$exporter_query =~ s/^    //mg;
my ($stalled_query) = $doc =~ /-- no purge cycle for 2 intervals.*?\n(SELECT .*?;)/s
  or die 'no stalled-purge query in docs/operations.md';
my ($alert_rules) = $doc =~ /```yaml\n(groups:.*?)```/s
  or die 'no alert rules in docs/operations.md';

my $node = inbox_node('monitoring',
	"inbox.purge_interval = '200ms'\ninbox.retention = '1min'\n");
my @databases = qw(shop exempt broken blocked);
for my $db (@databases)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION inbox');
}
$node->safe_psql('postgres', 'ALTER DATABASE exempt SET inbox.purge_worker = off');
# A trigger that makes every purge of "broken" fail.
$node->safe_psql(
	'broken', q{
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'the purge of broken fails'; END $$;
	CREATE TRIGGER refuse BEFORE DELETE ON inbox.markers FOR EACH ROW EXECUTE FUNCTION refuse();
});
add_markers($node, $_, 'billing', 10, '1 hour') for @databases;
# The holder's own purge keeps every marker (its retention), and the lock.
my $holder = $node->background_psql('blocked');
$holder->query_safe("SET inbox.retention = '3650d'");
$holder->query_safe('BEGIN');
$holder->query_safe('CALL inbox.purge()');

ok($node->poll_query_until('shop',
		q{SELECT count(*) = 4 FROM inbox.workers WHERE database IN ('shop', 'exempt', 'broken', 'blocked')}),
	'a worker reported on each database');
ok(wait_for_next_cycle($node, 'shop', 'shop'), 'shop is purged');
ok($node->poll_query_until('shop',
		q{SELECT last_error IS NOT NULL FROM inbox.workers WHERE database = 'broken'}),
	'broken fails');
ok($node->poll_query_until('shop',
		q{SELECT blocked_since IS NOT NULL FROM inbox.workers WHERE database = 'blocked'}),
	'blocked gives way to the purge lock');
is( $node->safe_psql('shop',
		q{SELECT string_agg(database || ':' || (last_error_at IS NOT NULL), ' ' ORDER BY database)
		  FROM inbox.workers WHERE database IN ('shop', 'broken')}),
	'broken:true shop:false',
	'last_error_at tells when the last error was');
# The exporter's query, in each database as an exporter would run it: one row, its own. Two
# scrapes, more than two purge intervals apart: do the cycles of each database go on ending?
sub scrape
{
	my %rows;
	for my $db (@databases)
	{
		my @rows = split /\n/, $node->safe_psql($db, $exporter_query);
		is(scalar(@rows), 1, "$db: the exporter query exports one row");
		my ($datname, $purging, $enabled, $last_end, $last_deleted, $total, $has_error,
			$last_error_time, $blocked)
		  = split /\|/, $rows[0];
		is($datname, $db, "$db: its own");
		$rows{$db} = {
			enabled => $enabled,
			last_end => $last_end,
			has_error => $has_error,
			blocked => $blocked
		};
	}
	return %rows;
}
my %first = scrape();
sleep(1);
ok(wait_for_next_cycle($node, 'shop', 'shop'), 'shop is still purged');
my %second = scrape();
my %metrics = map {
	$_ => {
		enabled => $second{$_}{enabled},
		ends => ($second{$_}{last_end} > $first{$_}{last_end} ? 1 : 0),
		has_error => $second{$_}{has_error},
		blocked => $second{$_}{blocked}
	  }
} keys %second;
is_deeply(
	\%metrics,
	{
		shop => { enabled => 1, ends => 1, has_error => 0, blocked => 0 },
		exempt => { enabled => 0, ends => 0, has_error => 0, blocked => 0 },
		broken => { enabled => 1, ends => 0, has_error => 1, blocked => 0 },
		blocked => { enabled => 1, ends => 0, has_error => 0, blocked => 1 },
	},
	'enabled, cycles ending, errors and giving way as the databases are');

is($node->safe_psql('shop', q{SELECT state FROM inbox.workers WHERE database = 'exempt'}),
	'off', 'inbox.workers shows the exempt database off');
is($node->safe_psql('shop', $stalled_query),
	"blocked\nbroken",
	'the plain-SQL check names the failing and the blocked databases, not the exempt one');
$holder->query_safe('COMMIT');
$holder->quit;

# The alerts of docs/operations.md on what the exporter saw, kept for 20 minutes: a database
# whose cycles end reports a cycle every minute, the others keep what they reported.
my $dir = tempdir(CLEANUP => 1);
open my $rules, '>', "$dir/rules.yml" or die $!;
print $rules $alert_rules;
close $rules;
my $series = '';
for my $db (sort keys %metrics)
{
	my $m = $metrics{$db};
	$series .= "      - series: 'pg_inbox_workers_enabled{datname=\"$db\"}'\n"
	  . "        values: '$m->{enabled}x20'\n"
	  . "      - series: 'pg_inbox_workers_last_cycle_end_timestamp{datname=\"$db\"}'\n"
	  . "        values: '" . ($m->{ends} ? '0+60x20' : '0x20') . "'\n";
}
open my $tests, '>', "$dir/tests.yml" or die $!;
print $tests <<"EOF_TESTS";
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
$series
    alert_rule_test:
      - eval_time: 15m
        alertname: InboxPurgeStalled
        exp_alerts:
          - exp_labels: {datname: blocked}
          - exp_labels: {datname: broken}
      - eval_time: 15m
        alertname: InboxPurgeWorkerMissing
        exp_alerts: []
  - interval: 1m
    input_series:
      - series: 'pg_inbox_stats_retained{datname="shop", consumer="billing"}'
        values: '5x20'
    alert_rule_test:
      - eval_time: 15m
        alertname: InboxPurgeWorkerMissing
        exp_alerts:
          - exp_labels: {}
EOF_TESTS
close $tests;
my ($stdout, $stderr);
my $passed = IPC::Run::run([ 'promtool', 'test', 'rules', "$dir/tests.yml" ],
	'>', \$stdout, '2>', \$stderr);
ok($passed,
	'promtool: InboxPurgeStalled fires for broken and blocked only, InboxPurgeWorkerMissing only without workers')
  or diag("$stdout$stderr");

$node->stop;
done_testing();
