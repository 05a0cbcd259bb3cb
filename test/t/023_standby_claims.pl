# On a hot standby every writing function fails at once with 25006, whether its consumer is known
# or new to the standby, naming the function and not an internal statement; nothing waits (a
# claim of a new consumer once waited for a worker that cannot start during recovery, and each
# cancelled one kept a worker slot), so no number of attempts uses anything up: ten rounds.
# Reading inbox.attempts of a database still at 1.1 registers nothing, on the primary (in a
# read-only transaction too) or on the standby.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $primary = inbox_node('primary', "inbox.purge_worker = off\n", allows_streaming => 1);
$primary->safe_psql('postgres', q{
	CREATE EXTENSION inbox;
	SELECT inbox.claim('known', 'm-1');
	CREATE FUNCTION noop(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->wait_for_catchup($standby);

my %calls = (
	'inbox.claim()' => "SELECT inbox.claim('%s', 'm-2')",
	'inbox.apply()' => "SELECT inbox.apply('%s', 'm-2', 'noop(jsonb)')",
	'inbox.receive()' => "SELECT inbox.receive('%s', 'm-2', wait => false)",
	'inbox.complete()' => "SELECT inbox.complete('%s', 'm-1', '{}')",
	'inbox.forget()' => "SELECT inbox.forget('%s', 'm-1')",
	'inbox.claim_batch()' => "SELECT inbox.claim_batch('%s', ARRAY['m-2'])",
	'inbox.apply_batch()' =>
	  "SELECT * FROM inbox.apply_batch('%s', 'noop(jsonb)', '[{\"id\": \"m-2\"}]')",
	'inbox.configure_consumer()' => "SELECT inbox.configure_consumer('%s', max_attempts => 3)");

# Ten rounds of every call for a consumer the standby knows and for new ones: a wait would end
# in the statement timeout (57014), and a kept resource would show in a later round.
my $failures = 0;
for my $round (1 .. 10)
{
	for my $function (sort keys %calls)
	{
		for my $consumer ('known', "new-$round")
		{
			my ($result, $stdout, $stderr) = $standby->psql(
				'postgres',
				"SET statement_timeout = '10s';\n" . sprintf($calls{$function}, $consumer),
				extra_params => [ '-v', 'VERBOSITY=verbose' ],
				on_error_stop => 1,
				timeout => 60);
			# (the overload of apply_batch taking fn as text, a SQL function calling the one
			# taking a regprocedure, adds a line of context of its own)
			(my $error = $stderr) =~ s/^CONTEXT:  SQL function "apply_batch" statement 1\n//m;
			next
			  if $error =~ /ERROR:  25006: cannot execute \Q$function\E during recovery/
			  && $error !~ /CONTEXT|INSERT|SQL statement/;
			$failures++;
			diag("$function for $consumer, round $round: $stderr");
		}
	}
}
is($failures, 0, 'every writing call fails at once with 25006 naming the function, ten rounds over');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM inbox.consumers'),
	'1', 'the standby still reads the registry');

# A database still at 1.1, whose inbox.attempts shows the failures of registered consumers only:
# the failures of a consumer whose first claims all rolled back are kept (by its name), and
# reading the view must not register it.
$primary->safe_psql('postgres', 'CREATE DATABASE legacy');
$primary->safe_psql('legacy', q{
	CREATE EXTENSION inbox VERSION '1.1';
	CREATE FUNCTION decline(payload jsonb) RETURNS void LANGUAGE plpgsql
		AS $$ BEGIN RAISE EXCEPTION 'declined'; END $$;
	SELECT inbox.claim('known', 'm-1');
});
$primary->psql('legacy', q{SELECT inbox.apply('unregistered', 'm-1', 'decline(jsonb)')});
$primary->psql('legacy', q{SELECT inbox.apply('known', 'm-2', 'decline(jsonb)')});
is($primary->safe_psql('legacy', q{
		SELECT string_agg(consumer || ':' || message_id, ' ' ORDER BY consumer) FROM inbox.attempts}),
	'known:m-2', '1.1: the failures of the registered consumer are shown');
is($primary->safe_psql('legacy', q{
		BEGIN READ ONLY;
		SELECT count(*) FROM inbox.attempts;
		COMMIT;}),
	'1', '1.1: and read in a read-only transaction');
$primary->wait_for_catchup($standby);
is($standby->safe_psql('legacy', 'SELECT count(*) FROM inbox.attempts'), '0',
	'1.1: and on the standby, which has no failure of its own');
is($primary->safe_psql('legacy', q{SELECT string_agg(consumer, ' ') FROM inbox.consumers}),
	'known', '1.1: reading the view registered no consumer');

$standby->stop;
$primary->stop;
done_testing();
