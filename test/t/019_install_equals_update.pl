# CREATE EXTENSION inbox (the install script of the default version) and CREATE EXTENSION inbox
# VERSION '1.0' followed by ALTER EXTENSION inbox UPDATE give the same objects: definitions,
# owners, comments, privileges and initial privileges (pg_init_privs), membership of the
# extension and the tables whose rows pg_dump dumps. The two scripts are written apart; this is
# what keeps them from drifting. Compared: pg_dump --binary-upgrade --schema-only, which writes out
# every member of an extension one by one, with the numbers that differ between any two
# databases (OIDs, LSNs, transaction ids) taken out.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('install_update', "inbox.purge_worker = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE installed');
$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('installed', 'CREATE EXTENSION inbox');
$node->safe_psql('updated', "CREATE EXTENSION inbox VERSION '1.0'");
$node->safe_psql('updated', 'ALTER EXTENSION inbox UPDATE');

my $version = $node->safe_psql('installed', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'");
is($node->safe_psql('updated', "SELECT extversion FROM pg_extension WHERE extname = 'inbox'"),
	$version, "both at $version");

# The dump of a database, without what differs between any two databases.
sub objects_of
{
	my ($db) = @_;
	my $file = "${PostgreSQL::Test::Utils::tmp_check}/$db.sql";
	$node->command_ok(
		[ 'pg_dump', '--schema-only', '--binary-upgrade', '--file', $file, '--dbname',
			$node->connstr($db) ],
		"pg_dump --binary-upgrade of $db");
	my @lines;
	for (split /\n/, slurp_file($file))
	{
		next if /^\\(un)?restrict /;
		s/'\d+'::pg_catalog\.oid/OID/g;
		s/'\{[0-9A-F\/,]*\}'::pg_catalog\.pg_lsn\[\]/LSNS/g;
		s/relfrozenxid = '\d+', relminmxid = '\d+'/relfrozenxid = XID, relminmxid = XID/;
		s/WHERE oid = '\d+'/WHERE oid = OID/;
		# the tables whose rows are dumped: compared by name below
		s/(binary_upgrade_create_empty_extension\('inbox', 'inbox', \w+, '[^']*', )'\{[\d,]*\}'/$1CONFIG/;
		push @lines, "$_\n";
	}
	my $normalized = "$file.normalized";
	open(my $out, '>', $normalized) or die "$normalized: $!";
	print $out @lines;
	close($out);
	return $normalized;
}
my ($installed, $updated) = (objects_of('installed'), objects_of('updated'));
my ($stdout, $stderr) = run_command([ 'diff', '-u', $installed, $updated ]);
is($stdout, '', 'the same objects, definitions, privileges and memberships');

my $config = q{
	SELECT string_agg(c::regclass::text || ':' || coalesce(w, ''), ' ' ORDER BY c::regclass::text)
	FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(c, w) WHERE e.extname = 'inbox'};
is($node->safe_psql('updated', $config), $node->safe_psql('installed', $config),
	'the same tables dumped with their rows');

$node->stop;
done_testing();
