# Helpers shared by the TAP tests (test/t/*.pl).
package InboxTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use Exporter 'import';

our @EXPORT =
  qw(inbox_node add_markers marker_count wait_for_next_cycle deliberately_kill crash_backend
  require_extension message_ids_sql);

# Skips the whole test file, saying why, when the PostgreSQL under test (the pg_config of PATH)
# has no extension $name installed: Debian packages pg_cron and pgTAP for a new major some time
# after the major itself.
sub require_extension
{
	my ($name, $package) = @_;
	my $sharedir = `pg_config --sharedir`;
	my $version = `pg_config --version`;
	chomp($sharedir, $version);
	return if -e "$sharedir/extension/$name.control";
	my ($major) = $version =~ /^PostgreSQL (\d+)/;
	plan skip_all => "$name is not installed for PostgreSQL $major (Debian: postgresql-$major-$package)";
}

# A node with the library preloaded and the given extra settings (postgresql.conf lines),
# started. The option preload names other libraries to preload instead ('' for none);
# install_path, the installation of another major to run (bin/ and lib/ under it); start => 0
# leaves it stopped; extra, more arguments of initdb; the other options go to init. $settings
# may be a function of the node, for settings that name its socket directory. Its databases are
# UTF8 with the C locale whatever the environment's locale, as the tests' ids and ICU collations
# need.
sub inbox_node
{
	my ($name, $settings, %init) = @_;
	my $preload = delete $init{preload} // 'inbox';
	my $install_path = delete $init{install_path};
	my $start = delete $init{start} // 1;
	my $extra = delete $init{extra} // [];
	my $node = PostgreSQL::Test::Cluster->new($name,
		defined $install_path ? (install_path => $install_path) : ());
	$settings = $settings->($node) if ref $settings eq 'CODE';
	$node->init(extra => [ '--encoding=UTF8', '--no-locale', @$extra ], %init);
	my $conf = ($preload eq '' ? '' : "shared_preload_libraries = '$preload'\n") . ($settings // '');
	$node->append_conf('postgresql.conf', $conf) if $conf ne '';
	$node->start if $start;
	return $node;
}

# Inserts $count markers of $consumer, processed $age ago (an interval literal).
sub add_markers
{
	my ($node, $db, $consumer, $count, $age) = @_;
	$node->safe_psql($db,
		"INSERT INTO inbox.messages (consumer, message_id, processed_at) "
		  . "SELECT '$consumer', '$consumer-' || i || '-' || clock_timestamp(), "
		  . "now() - interval '$age' FROM generate_series(1, $count) i");
}

# SQL creating the table ids(message_id) of message ids of every form the store keeps apart (a
# UUID in both cases, 16 and 17 characters, a long and a multibyte id, one decomposed), then
# $count random UUIDs and the ids 'msg-1' to 'msg-$count'.
sub message_ids_sql
{
	my ($count) = @_;
	return q{
	CREATE TABLE ids (message_id text);
	INSERT INTO ids VALUES ('0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f'), ('0B6C1A2E-7F3A-4C9D-8E21-5A6B7C8D9E0F'),
		('abcdefghijklmnop'), ('abcdefghijklmnopq'), ('orders-2026-000123456'), (repeat('x', 128)),
		(repeat(U&'\00E9', 64)), (U&'\00E9t\00E9-\2603'), ('a'), ('with space '), (U&'e\0301');
}
	  . "INSERT INTO ids SELECT gen_random_uuid()::text FROM generate_series(1, $count);\n"
	  . "INSERT INTO ids SELECT 'msg-' || g FROM generate_series(1, $count) g;\n";
}

sub marker_count
{
	my ($node, $db, $consumer) = @_;
	return $node->safe_psql($db,
		"SELECT count(*) FROM inbox.messages WHERE consumer = '$consumer'");
}

# Waits until the worker of $db has run a whole purge cycle that began after this call, so that
# what it did not delete, it left on purpose. $view_db is a database where inbox.workers is.
sub wait_for_next_cycle
{
	my ($node, $view_db, $db) = @_;
	my $since = $node->safe_psql($view_db, 'SELECT clock_timestamp()');
	return $node->poll_query_until($view_db,
		"SELECT last_cycle_start > '$since' FROM inbox.workers WHERE database = '$db'");
}

# kill -9 of a server process, recorded in tmp_check/deliberate-kills (beside the nodes' logs,
# and emptied with them by each run) so that the log check of test/run.sh accepts it. With
# may_have_exited => 1, a process already gone is no error: the answer is whether it was killed.
sub deliberately_kill
{
	my ($pid, %options) = @_;
	my $record = "${PostgreSQL::Test::Utils::tmp_check}/deliberate-kills";
	open(my $kills, '>>', $record) or die "$record: $!";
	print $kills "$pid\n";
	close($kills);
	return 1 if kill 'KILL', $pid;
	die "could not kill $pid: $!" unless $options{may_have_exited} && $!{ESRCH};
	return 0;
}

# Crashes the node by killing the backend of a background psql session with SIGKILL, and returns
# once the postmaster has reinitialised shared memory and accepts connections again. Until it has
# noticed the crash a new connection may still succeed, and then be terminated by the
# reinitialisation: what follows must not run before it.
sub crash_backend
{
	my ($node, $session) = @_;
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	my $log_offset = -s $node->logfile;
	deliberately_kill($pid);
	$session->quit;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
	$node->poll_query_until('postgres', 'SELECT true', 't')
	  or die 'no restart after the crash';
	return;
}

1;
