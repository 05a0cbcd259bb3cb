# The settings without shared_preload_libraries, as docs/operations.md says (its settings):
# PostgreSQL 15 knows inbox.* only in a session that has loaded the library, so ALTER SYSTEM is
# refused before LOAD 'inbox' and accepted after it; ALTER DATABASE ... SET works either way, but
# a wrong value it gave is checked only when a session loads the library: ignored then, with a
# warning, for the default (not the server-wide value). A consumer's max_attempts, which needs the
# preload, is kept with a warning that says so. The drop guard works there too, whichever
# statement drops the extension.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('plain', '', preload => '');
$node->safe_psql('postgres', 'CREATE EXTENSION inbox');

my ($rc, $out, $err) =
  $node->psql('postgres', q{ALTER SYSTEM SET inbox.retention = '14d'});
like($err, qr/unrecognized configuration parameter "inbox.retention"/,
	'ALTER SYSTEM before the library is loaded: refused by PostgreSQL');
is( $node->safe_psql('postgres',
		q{LOAD 'inbox'; ALTER SYSTEM SET inbox.retention = '14d'; SELECT pg_reload_conf()}),
	't', 'after LOAD in the same session: accepted');
ok($node->poll_query_until('postgres', q{SELECT current_setting('inbox.retention', true) = '14d'}),
	'reloaded');
is($node->safe_psql('postgres', q{LOAD 'inbox'; SHOW inbox.retention}), '14d', 'and in force');
($rc, $out, $err) = $node->psql('postgres', q{LOAD 'inbox'; ALTER SYSTEM SET inbox.retention = '30'});
like($err, qr/invalid value for parameter "inbox.retention": "30"/,
	'a loaded library checks the value ALTER SYSTEM writes');

$node->safe_psql('postgres', q{ALTER DATABASE postgres SET inbox.retention = '7d'});
is($node->safe_psql('postgres', q{LOAD 'inbox'; SHOW inbox.retention}),
	'7d', 'ALTER DATABASE ... SET without the library loaded: in force once it is');
$node->safe_psql('postgres', q{ALTER DATABASE postgres SET inbox.retention = '7'});
($rc, $out, $err) = $node->psql('postgres', q{LOAD 'inbox'; SHOW inbox.retention});
is($out, '30d', 'a wrong value from ALTER DATABASE is ignored, for the default');
like($err, qr/WARNING:  invalid value for parameter "inbox.retention": "7"/, 'with a warning');

# max_attempts is kept, with a warning: without the preload no failed attempt is counted, and no
# message is ever poisoned.
($rc, $out, $err) = $node->psql('postgres',
	q{SELECT inbox.configure_consumer('cards', max_attempts => 1)});
like($err, qr/WARNING:  max_attempts of consumer "cards" has no effect until inbox is preloaded\n.*\nHINT:  Add inbox to shared_preload_libraries/,
	'max_attempts without the preload: a warning naming shared_preload_libraries');
is($node->safe_psql('postgres', q{SELECT max_attempts FROM inbox.consumers WHERE consumer = 'cards'}),
	'1', 'and the limit is kept, for the first start with the preload');
($rc, $out, $err) = $node->psql('postgres',
	q{SELECT inbox.configure_consumer('cards', retention => '1 day')});
unlike($err, qr/max_attempts/, 'no warning for a consumer without max_attempts');
$node->psql('postgres', q{
	BEGIN; SELECT inbox.receive('cards', 'c-1'); ROLLBACK;
	BEGIN; SELECT inbox.receive('cards', 'c-1'); ROLLBACK;});
is($node->safe_psql('postgres', q{SELECT outcome FROM inbox.receive('cards', 'c-1')}),
	'processed', 'as the warning said: two failures later, still processed');
$node->safe_psql('postgres', q{DELETE FROM inbox.messages WHERE consumer = 'cards'});

# The guard of DROP EXTENSION, in sessions that have not loaded the library: the event trigger
# loads it, and a setting given before (as PGOPTIONS would give it) is in force.
$node->safe_psql('postgres', q{SELECT inbox.claim('billing', 'm-1')});
($rc, $out, $err) = $node->psql('postgres', 'DROP EXTENSION inbox');
like($err, qr/dropping extension inbox would delete the markers of 1 consumer\n/,
	'DROP EXTENSION with markers: refused');
$node->safe_psql('postgres', 'SET inbox.allow_drop_with_markers = on; DROP EXTENSION inbox');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'}),
	'0', 'dropped when the session says so before the library is loaded');

# Statements that drop the extension without naming it, each in a session that has not loaded
# the library: DROP OWNED BY the role that created it, and the drop of an extension it depends on.
$node->safe_psql('postgres', q{
	DROP SCHEMA inbox;
	CREATE ROLE owner_of_inbox SUPERUSER;
	SET ROLE owner_of_inbox;
	CREATE EXTENSION inbox;
	SELECT inbox.claim('billing', 'm-1');
});
($rc, $out, $err) = $node->psql('postgres', 'DROP OWNED BY owner_of_inbox');
like($err, qr/ERROR:  dropping extension inbox would delete its markers\n/,
	'DROP OWNED BY its owner with markers: refused');
($rc, $out, $err) = $node->psql('postgres', 'DROP EXTENSION plpgsql CASCADE');
like($err, qr/ERROR:  dropping extension inbox would delete its markers\n/,
	'DROP EXTENSION plpgsql CASCADE with markers: refused');
is($node->safe_psql('postgres', q{SELECT count(*) FROM inbox.messages}), '1', 'nothing dropped');
$node->safe_psql('postgres',
	'SET inbox.allow_drop_with_markers = on; DROP OWNED BY owner_of_inbox');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_extension WHERE extname = 'inbox'}),
	'0', 'DROP OWNED drops it when the session says so');

$node->stop;
done_testing();
