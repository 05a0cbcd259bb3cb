# Markers are user data: after pg_dump and pg_restore into a new database, every message that
# was processed before is still a duplicate, and new ones are processed. A consumer's owner is
# dumped by the role's name and restored with it; a restore where that role does not exist
# restores the registry whole, and the consumer serves superusers only, saying why, until the
# role exists.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('dump', '', preload => '');

$node->safe_psql('postgres', q{
    CREATE DATABASE source;
    CREATE ROLE billing_service LOGIN;
    CREATE ROLE other_service LOGIN;
});
$node->safe_psql('source', q{
    CREATE EXTENSION inbox;
    SELECT inbox.grant_access('billing_service', 'consume'), inbox.grant_access('other_service', 'consume');
    SELECT inbox.configure_consumer('billing', owner => 'billing_service');
    SELECT inbox.claim('billing', 'msg-' || g) FROM generate_series(1, 100) g;
    SELECT inbox.claim('shipping', 'msg-1');
    UPDATE inbox.messages SET processed_at = '2026-01-02 03:04:05+00' WHERE message_id = 'msg-1';
});

my $dump = "${PostgreSQL::Test::Utils::tmp_check}/source.dump";
$node->command_ok(['pg_dump', '--format=custom', '--file', $dump,
    '--dbname', $node->connstr('source')], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['pg_restore', '--exit-on-error', '--dbname', $node->connstr('restored'), $dump],
    'pg_restore');

is($node->safe_psql('restored', 'SELECT count(*) FROM inbox.messages'), '101',
    'every marker restored');
is($node->safe_psql('restored',
    q{SELECT processed_at FROM inbox.messages WHERE consumer = 'billing' AND message_id = 'msg-1'}),
    '2026-01-02 03:04:05+00', 'with its processing time');
is($node->safe_psql('restored', q{SELECT inbox.claim('billing', 'msg-42')}), 'f',
    'a message processed before the dump is a duplicate after the restore');
is($node->safe_psql('restored', q{SELECT inbox.claim('billing', 'msg-101')}), 't',
    'a new message is processed');
is($node->safe_psql('restored',
    q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox' AND extconfig IS NOT NULL}), '1',
    'the marker table is still registered for the next dump');
is($node->safe_psql('restored', q{SELECT owner FROM inbox.consumers WHERE consumer = 'billing'}),
    'billing_service', 'the consumer keeps its owner');
my ($status, $out, $err) = $node->psql('restored', q{SELECT inbox.claim('billing', 'msg-102')},
    extra_params => [ '-U', 'other_service' ]);
like($err, qr/permission denied for consumer "billing"/, 'which alone may claim for it');
is($node->safe_psql('restored', q{SELECT inbox.claim('billing', 'msg-102')},
        extra_params => [ '-U', 'billing_service' ]),
    't', 'and does');

# A plain-SQL dump restores the same way.
$node->command_ok(['pg_dump', '--file', "$dump.sql", '--dbname', $node->connstr('source')],
    'plain pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored_plain');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', "$dump.sql",
    '-d', $node->connstr('restored_plain')], 'restore with psql');
is($node->safe_psql('restored_plain', q{SELECT inbox.claim('shipping', 'msg-1')}), 'f',
    'markers restored from a plain dump are duplicates too');

# A database whose consumer is owned by a role the target of the restore does not have (here
# dropped before the restore; on another cluster, never created).
$node->safe_psql('postgres', q{
    CREATE DATABASE lost_role;
    CREATE ROLE gone_service LOGIN;
});
$node->safe_psql('lost_role', q{
    CREATE EXTENSION inbox;
    SELECT inbox.grant_access('other_service', 'consume');
    SELECT inbox.claim('alpha', 'a-' || g) FROM generate_series(1, 10) g;
    SELECT inbox.configure_consumer('alpha', owner => 'gone_service');
    SELECT inbox.claim('beta', 'b-1');
    SELECT inbox.claim('gamma', 'g-1');
});
$node->command_ok(['pg_dump', '--format=custom', '--file', "$dump.lost_role",
    '--dbname', $node->connstr('lost_role')], 'pg_dump of a consumer owned by a role');
$node->safe_psql('postgres', 'DROP DATABASE lost_role; DROP ROLE gone_service');
$node->safe_psql('postgres', 'CREATE DATABASE without_role');
$node->command_ok(['pg_restore', '--exit-on-error', '--dbname', $node->connstr('without_role'),
    "$dump.lost_role"], 'pg_restore without the owner role succeeds');
is($node->safe_psql('without_role', q{
        SELECT string_agg(consumer || ':' || coalesce(owner::text, '-'), ' ' ORDER BY consumer)
        FROM inbox.consumers}),
    'alpha:gone_service beta:- gamma:-', 'the whole registry is restored, the owner by its name');
is($node->safe_psql('without_role', q{SELECT inbox.claim('gamma', 'g-1')}), 'f',
    'a message processed before the dump is still a duplicate');
is($node->safe_psql('without_role', q{
        SELECT count(*) FILTER (WHERE inbox.claim('alpha', 'a-' || g)) FROM generate_series(1, 10) g}),
    '0', 'and so is every message of the consumer whose owner is missing');
($status, $out, $err) = $node->psql('without_role', q{SELECT inbox.claim('alpha', 'a-11')},
    extra_params => [ '-U', 'other_service' ]);
like($err, qr/permission denied for consumer "alpha".*\n.*role "gone_service", does not exist/,
    'another role is refused, told that the owner role does not exist');
is($node->safe_psql('without_role', q{SELECT count(*) FROM inbox.messages WHERE message_id = 'a-11'}),
    '0', 'and nothing is written');
# Once the role is created, its members act for the consumer again, in a session that had
# looked the consumer up before (the owner is looked up again).
is($node->safe_psql('without_role', q{
        SELECT inbox.claim('alpha', 'a-12');
        CREATE ROLE gone_service LOGIN;
        DO $$ BEGIN PERFORM inbox.grant_access('gone_service', 'consume'); END $$;
        SET ROLE gone_service;
        SELECT inbox.claim('alpha', 'a-13');}),
    "t\nt", 'the created owner role claims for its consumer');

$node->stop;
done_testing();
