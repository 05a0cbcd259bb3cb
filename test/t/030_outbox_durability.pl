# The outbox is user data: delivered, pending, leased and dead messages and the send order survive
# pg_dump/pg_restore (a send after the restore goes out after the restored messages of its key);
# committed sends survive a crash and an uncommitted one leaves nothing; a standby refuses to
# send or lease at once (25006) and reads inbox.outbox.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('outbox_primary', '', allows_streaming => 1);
$node->safe_psql('postgres', 'CREATE DATABASE source');
$node->safe_psql('source', q{
	CREATE EXTENSION inbox;
	SELECT inbox.send('done', '"delivered"', 'delivered');
	SELECT inbox.relay_done(array_agg(id)) FROM inbox.relay_take('relay-1', 10, destinations => ARRAY['done']);
	SELECT inbox.send('d', '"k-1"', 'k'), inbox.send('d', '"k-2"', 'k');
	SELECT inbox.send('leased', '"leased"'), inbox.send('dead', '"dead"');
	SELECT count(*) FROM inbox.relay_take('relay-1', 10, '1 day', ARRAY['leased']);
	SET inbox.outbox_max_attempts = 1;
	SELECT inbox.relay_failed(array_agg(id), 'refused')
	FROM inbox.relay_take('relay-1', 10, destinations => ARRAY['dead']);
});
# (a delivered message keeps its key, not its payload)
my $states = q{SELECT string_agg(coalesce(m.payload #>> '{}', o.key) || ':' || o.state || ':'
	|| o.attempts, ' ' ORDER BY m.ordinal NULLS FIRST)
	FROM inbox.outbox o LEFT JOIN inbox.outbox_messages m USING (id)};
my $before = $node->safe_psql('source', $states);
is( $before,
	'delivered:delivered:1 k-1:pending:0 k-2:pending:0 leased:leased:1 dead:dead:1',
	'the messages to dump');

# ---- pg_dump and pg_restore -------------------------------------------------------------------
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/outbox.dump";
$node->command_ok([ 'pg_dump', '--format=custom', '--file', $dump, '--dbname',
		$node->connstr('source') ], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'),
		$dump ], 'pg_restore');
is($node->safe_psql('restored', $states), $before,
	'delivered, pending, leased and dead messages restored with their attempts, in send order');
is( $node->safe_psql('restored',
		q{SELECT string_agg(leased_by || ':' || (not_before > now()), ' ') FROM inbox.outbox
		  WHERE state = 'leased'}),
	'relay-1:true', 'the lease with its holder and its end');
$node->safe_psql('restored', q{SELECT inbox.send('d', '"k-3"', 'k')});
is( $node->safe_psql('restored',
		q{SELECT bool_and(m.ordinal < n.ordinal) FROM inbox.outbox_messages m,
		  inbox.outbox_messages n WHERE n.payload = '"k-3"' AND m.payload <> '"k-3"'}),
	't', 'a send after the restore is numbered after every restored message');
my @taken;
for (1 .. 3)
{
	push @taken, $node->safe_psql('restored', q{
		WITH t AS (SELECT * FROM inbox.relay_take('relay-2', 10, destinations => ARRAY['d']))
		SELECT string_agg(payload #>> '{}', ' ') || ':' || inbox.relay_done(array_agg(id))
		FROM t});
}
is(join(' ', @taken), 'k-1:1 k-2:1 k-3:1',
	'the key goes out in send order: the restored messages before the new one');

# ---- a crash ------------------------------------------------------------------------------------
$node->safe_psql('source',
	q{SELECT inbox.send('crash', jsonb_build_object('n', g), 'c') FROM generate_series(1, 50) g});
my $open = $node->background_psql('source', on_error_stop => 0);
$open->query_safe('BEGIN');
$open->query_safe(q{SELECT inbox.send('crash', '"uncommitted"')});
$node->stop('immediate');
$open->{run}->finish;    # its connection is gone with the server
$node->start;
is( $node->safe_psql('source',
		q{SELECT count(*) FILTER (WHERE payload ? 'n') || ':'
		  || count(*) FILTER (WHERE payload = '"uncommitted"')
		  FROM inbox.outbox_messages WHERE destination = 'crash'}),
	'50:0', 'the committed sends survive the crash; the uncommitted one left nothing');
$node->safe_psql('source', q{SELECT inbox.send('crash', '"after"', 'c')});
is( $node->safe_psql('source',
		q{SELECT max(ordinal) FILTER (WHERE payload ? 'n')
		     < max(ordinal) FILTER (WHERE payload = '"after"')
		  FROM inbox.outbox_messages WHERE destination = 'crash'}),
	't', 'a send after the crash is numbered after the ones before it');

# ---- a streaming standby ------------------------------------------------------------------------
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('outbox_standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
$node->safe_psql('source', q{SELECT inbox.send('late', '"after the backup"')});
$node->wait_for_catchup($standby);
for my $call (q{SELECT inbox.send('d', '{}')}, q{SELECT * FROM inbox.relay_take('relay-3')})
{
	my ($rc, $out, $err) = $standby->psql('source', "\\set VERBOSITY verbose\n$call",
		timeout => 10);
	like($err, qr/ERROR:  25006:/, "the standby refuses at once: $call");
}
is( $standby->safe_psql('source',
		q{SELECT count(*) FROM inbox.outbox WHERE destination IN ('crash', 'late')}),
	'52', 'the standby reads inbox.outbox, streamed sends included');

$standby->stop;
$node->stop;
done_testing();
