# ALTER EXTENSION inbox UPDATE from 1.2 to the default version (1.3), which keeps a consumer's
# owner by the role's name instead of its OID: every marker stays a duplicate, every consumer
# keeps its id, settings and owner, an owner role dropped under 1.2 still leaves the consumer to
# superusers only, the grants on the views that were replaced (made with grant_access or by
# hand) still work and are dumped, 'operate' and 'consume' access granted under 1.2 include what
# 1.3 adds to them (reset_consumer and schedule_purge; send), and a dump of the updated database
# restores with all of it, also where an owner role does not exist.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('update_1_2', "inbox.purge_worker = off\n");
$node->safe_psql('postgres', q{
	CREATE DATABASE shop;
	CREATE ROLE billing_service LOGIN;
	CREATE ROLE shipping_service LOGIN;
	CREATE ROLE "Audit Team" LOGIN;
	CREATE ROLE dropped_service LOGIN;
	CREATE ROLE dashboard LOGIN;
	CREATE ROLE auditor LOGIN;
	CREATE ROLE ops LOGIN;
});

# 1.2, used as 1.2 was: consumers with owners (one whose name needs quoting, one whose role is
# dropped), open ones, markers of every stored form, settings, a monitoring role and a hand-made
# grant on inbox.consumers.
$node->safe_psql('shop', q{
	CREATE EXTENSION inbox VERSION '1.2';
	SELECT inbox.grant_access(r::regrole, 'consume')
	FROM (VALUES ('billing_service'), ('shipping_service'), ('"Audit Team"')) g (r);
	SELECT inbox.grant_access('dashboard', 'monitor'), inbox.grant_access('ops', 'operate');
	GRANT USAGE ON SCHEMA inbox TO auditor;
	GRANT SELECT ON inbox.consumers TO auditor;
	GRANT SELECT (consumer, owner) ON inbox.consumers TO ops;
	CREATE VIEW public.owned_consumers AS SELECT consumer FROM inbox.consumers WHERE owner IS NOT NULL;
} . message_ids_sql(200) . q{
	SELECT count(inbox.claim(c, i.message_id)) FROM ids i,
		(VALUES ('billing'), ('shipping'), ('audit'), ('orphan'), ('open')) v(c);
	SELECT inbox.configure_consumer('billing', retention => '3 days', max_attempts => 3,
	                                owner => 'billing_service');
	SELECT inbox.configure_consumer('shipping', owner => 'shipping_service');
	SELECT inbox.configure_consumer('audit', owner => '"Audit Team"');
	SELECT inbox.configure_consumer('orphan', owner => 'dropped_service');
	CREATE TABLE markers_before AS SELECT consumer, message_id, processed_at FROM inbox.messages;
	CREATE TABLE registry_before AS
		SELECT id, name, retention, max_attempts, registered_at, owner::text AS owner
		FROM inbox.consumer_registry;
});
$node->safe_psql('postgres', 'DROP ROLE dropped_service');

# A view of the user's over inbox.consumers, which the update creates again: the update stops,
# naming it, and changes nothing; dropped, the update goes through.
my ($rc, $out, $err) = $node->psql('shop', 'ALTER EXTENSION inbox UPDATE');
like($err, qr/cannot update inbox while other objects depend on inbox.consumers.*\n.*view public.owned_consumers/,
	'a view over inbox.consumers stops the update, named');
is($node->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	'1.2', 'and leaves the extension at 1.2');
$node->safe_psql('shop', 'DROP VIEW public.owned_consumers');

$node->safe_psql('shop', 'ALTER EXTENSION inbox UPDATE');
is($node->safe_psql('shop', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	'1.3', 'the extension is at 1.3');

my $dump = "${PostgreSQL::Test::Utils::tmp_check}/updated_1_2.dump";
$node->command_ok(['pg_dump', '--format=custom', '--file', $dump, '--dbname', $node->connstr('shop')],
	'pg_dump of the updated database');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'), $dump],
	'pg_restore of it');

# What a database must answer after the update, and after its restore. $label says which.
sub check_kept
{
	my ($db, $label) = @_;
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM markers_before b FULL JOIN inbox.messages m
			    USING (consumer, message_id, processed_at)
			WHERE b.consumer IS NULL OR m.consumer IS NULL}),
		'0', "$label: every marker is there, ids and times as they were");
	is( $node->safe_psql($db, q{
			SELECT count(*) FROM registry_before b FULL JOIN inbox.consumer_registry r USING (id)
			WHERE (b.name, b.retention, b.max_attempts, b.registered_at)
			      IS DISTINCT FROM (r.name, r.retention, r.max_attempts, r.registered_at)}),
		'0', "$label: every consumer keeps its id and its settings");
	like( $node->safe_psql($db, q{
			SELECT string_agg(consumer || ':' || coalesce(owner, '-'), ' ' ORDER BY consumer)
			FROM inbox.consumers}),
		qr/^audit:Audit Team billing:billing_service open:- orphan:unknown \(OID=\d+\) shipping:shipping_service$/,
		"$label: every owner by its role's name, a dropped one by what 1.2 knew of it (its OID)");
	is( $node->safe_psql($db, q{
			SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) FROM markers_before}),
		'0', "$label: every message processed before is a duplicate");
	for my $owner ([ 'billing', 'billing_service' ], [ 'audit', 'Audit Team' ])
	{
		my ($consumer, $role) = @$owner;
		is( $node->safe_psql($db, qq{SELECT inbox.claim('$consumer', 'after-$db')},
				extra_params => [ '-U', $role ]),
			't', "$label: role $role claims for its consumer $consumer");
		my ($status, $out, $err) = $node->psql($db, qq{SELECT inbox.claim('$consumer', 'other-$db')},
			extra_params => [ '-U', 'shipping_service' ]);
		like($err, qr/permission denied for consumer "$consumer"/,
			"$label: another role is refused for $consumer");
	}
	my ($status, $out, $err) = $node->psql($db, q{SELECT inbox.claim('orphan', 'o-1')},
		extra_params => [ '-U', 'billing_service' ]);
	like($err, qr/permission denied for consumer "orphan"/,
		"$label: the consumer whose owner was dropped serves no other role");
	is($node->safe_psql($db, q{SELECT inbox.claim('orphan', 'o-1')}), 't',
		"$label: and serves superusers");
	is( $node->safe_psql($db, q{
			SELECT string_agg(has_function_privilege('ops', r, 'EXECUTE')::text, ' ' ORDER BY r)
			FROM unnest(ARRAY['inbox.reset_consumer(text, text[])', 'inbox.schedule_purge(text)',
			                  'inbox.unschedule_purge()']) r}),
		'true true true', "$label: the operator of 1.2 may reset a consumer and schedule the purge");
	is( $node->safe_psql($db, q{
			SELECT string_agg(has_function_privilege('billing_service', r, 'EXECUTE')::text, ' '
			                  ORDER BY r)
			FROM unnest(ARRAY['inbox.send(text, jsonb, text, jsonb)',
			                  'inbox.send_bytes(text, bytea, text, jsonb)']) r}),
		'true true', "$label: the consumer of 1.2 may send");
	is( $node->safe_psql($db, q{
			SELECT has_function_privilege('ops', 'inbox.send(text, jsonb, text, jsonb)', 'EXECUTE')
			    OR has_function_privilege('dashboard', 'inbox.send(text, jsonb, text, jsonb)', 'EXECUTE')}),
		'f', "$label: and only the consumer");
	is( $node->safe_psql($db, q{SELECT count(*) FROM inbox.consumers}, extra_params => [ '-U', 'dashboard' ])
		  . ' ' . $node->safe_psql($db, q{SELECT count(*) FROM inbox.consumers},
			extra_params => [ '-U', 'auditor' ]),
		'5 5', "$label: the grants on inbox.consumers, by grant_access and by hand, still work");
	is( $node->safe_psql($db, q{SELECT count(owner) FROM inbox.consumers},
			extra_params => [ '-U', 'ops' ]),
		'4', "$label: and those on its columns");
	is( $node->safe_psql($db, q{
			SELECT string_agg(has_table_privilege('dashboard', v, 'SELECT')::text, ' ' ORDER BY v)
			FROM unnest(ARRAY['inbox.outbox', 'inbox.outbox_stats', 'inbox.streams']) v}),
		'true true true', "$label: the monitoring role of 1.2 reads the views of 1.3");
	$node->safe_psql($db, q{SELECT inbox.configure_consumer('shipping', owner => 'billing_service')});
	is( $node->safe_psql($db, q{SELECT owner FROM inbox.consumers WHERE consumer = 'shipping'}),
		'billing_service', "$label: configure_consumer gives a consumer another owner");
	return;
}

check_kept('shop', 'updated');
check_kept('restored', 'restored');

$node->stop;
done_testing();
