# A copy that waits for the transaction holding its marker waits at most lock_timeout, as any
# lock wait: then it fails with 55P03 (lock_not_available) and writes nothing, as the errors
# table of docs/outcomes.md says. inbox.receive(..., wait => false) answers in_progress at once
# instead.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('timeout', '');
$node->safe_psql('postgres', 'CREATE EXTENSION inbox');

my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN');
$holder->query_safe(q{SELECT inbox.claim('billing', 'm-1')});

my ($rc, $out, $err) = $node->psql(
	'postgres',
	q{SET lock_timeout = '100ms'; SELECT inbox.claim('billing', 'm-1')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  55P03: canceling statement due to lock timeout/,
	'a copy waiting longer than lock_timeout: 55P03');
# A receive that waited would wait for the holder, which commits only below: the statement
# timeout turns that into a failure instead of a test that never ends.
($rc, $out, $err) = $node->psql('postgres',
	q{SET statement_timeout = '5s'; SELECT (inbox.receive('billing', 'm-1', wait => false)).outcome});
is("$out$err", 'in_progress', 'receive without waiting: in_progress at once');

$holder->query_safe('COMMIT');
$holder->quit;
is($node->safe_psql('postgres', q{SELECT inbox.claim('billing', 'm-1')}),
	'f', 'retried after the first committed: a duplicate');
is($node->safe_psql('postgres', q{SELECT count(*) FROM inbox.messages}), '1',
	'the copy that timed out wrote nothing');

$node->stop;
done_testing();
