# Helpers of the Citus suite (test/citus/*.pl): a coordinator and two workers with Citus and
# the library preloaded, the extension created on the coordinator (Citus propagates it), its
# tables distributed the supported way (inbox.distribute), and what the tests ask of Citus's
# catalogs.
#
# A test file starts with
#	use CitusTest;
#	my $cluster = citus_cluster('name');
# which skips the whole file when Citus is not installed.
package CitusTest;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Exporter 'import';
use InboxTest;

our @EXPORT = qw(citus_installed citus_cluster distribute_inbox distribute_table on_nodes
  shard_placements shard_node marker_node shard_tables psql_error remote_prepares
  insert_markers);

# Settings of every node.
#  - citus.node_conninfo: Citus built with OpenSSL defaults to sslmode=require, and then its
#    CREATE EXTENSION turns ssl on with ALTER SYSTEM and generates a self-signed certificate
#    in the data directory (citus_setup_ssl). The nodes talk over a Unix socket, where libpq
#    does not use SSL whatever sslmode says, so that work buys nothing: sslmode=disable skips
#    it.
#  - citus.local_hostname: how a node connects to itself (shard moves, some DDL); the default,
#    localhost, is a TCP address, where these nodes do not listen.
#  - max_prepared_transactions: a transaction that writes over several connections commits
#    with two-phase commit, which PostgreSQL refuses at the default of 0.
#  - citus.shard_count: 4 shards (2 per worker) keep DDL quick and still spread every table
#    over both workers.
#  - inbox.purge_worker = off: a test that wants the workers turns them on, so that no purge
#    runs behind the back of the others.
my $node_settings = <<'EOF_CONF';
max_connections = 100
max_prepared_transactions = 50
citus.node_conninfo = 'sslmode=disable'
citus.shard_count = 4
inbox.purge_worker = off
EOF_CONF

sub citus_installed
{
	my ($stdout) = run_command([ 'pg_config', '--pkglibdir' ]);
	chomp $stdout;
	return -e "$stdout/citus.so";
}

# Starts the coordinator and the workers, registers the workers, and creates the extension.
# Returns { coordinator => node, workers => [node, node], nodes => [all three] }. $settings
# (postgresql.conf lines) are added on every node.
sub citus_cluster
{
	my ($name, $settings) = @_;
	plan skip_all => 'Citus is not installed' unless citus_installed();

	my $conf = sub {
		my ($node) = @_;
		return $node_settings
		  . sprintf("citus.local_hostname = '%s'\n", $node->host)
		  . ($settings // '');
	};
	my $coordinator = inbox_node("${name}_coordinator", $conf, preload => 'citus,inbox');
	my @workers =
	  map { inbox_node("${name}_worker$_", $conf, preload => 'citus,inbox') } (1, 2);
	my @nodes = ($coordinator, @workers);

	$_->safe_psql('postgres', 'CREATE EXTENSION citus') for @nodes;
	$coordinator->safe_psql('postgres',
		sprintf("SELECT citus_set_coordinator_host('%s', %d)", $coordinator->host,
			$coordinator->port));
	$coordinator->safe_psql('postgres',
		sprintf("SELECT citus_add_node('%s', %d)", $_->host, $_->port))
	  for @workers;
	$coordinator->safe_psql('postgres', 'CREATE EXTENSION inbox');

	return { coordinator => $coordinator, workers => \@workers, nodes => \@nodes };
}

# inbox.distribute(), with its arguments as options (distribution_column => 'consumer_id',
# shard_count => 8, colocate_with => 'payments').
sub distribute_inbox
{
	my ($cluster, %options) = @_;
	return $cluster->{coordinator}->safe_psql('postgres',
		'SELECT inbox.distribute(' . named_arguments(%options) . ')');
}

# create_distributed_table($table, $column), with the other arguments as options
# (colocate_with => 'other_table', shard_count => 8).
sub distribute_table
{
	my ($cluster, $table, $column, %options) = @_;
	my $arguments = named_arguments(%options);
	$arguments = ", $arguments" if $arguments ne '';
	return $cluster->{coordinator}->safe_psql('postgres',
		"SELECT create_distributed_table('$table', '$column'$arguments)");
}

sub named_arguments
{
	my (%options) = @_;
	return join(', ', map { "$_ := " . sql_literal($options{$_}) } sort keys %options);
}

sub sql_literal
{
	my ($value) = @_;
	return $value if $value =~ /^[0-9]+$/;
	$value =~ s/'/''/g;
	return "'$value'";
}

# The results of $sql on each node, coordinator first.
sub on_nodes
{
	my ($cluster, $sql, $db) = @_;
	return map { $_->safe_psql($db // 'postgres', $sql) } @{ $cluster->{nodes} };
}

# Shard placements of $table per node, as "coordinator:0 worker1:2 worker2:2". citus_shards
# leaves out tables that belong to an extension, so this reads Citus's catalogs.
sub shard_placements
{
	my ($cluster, $table) = @_;
	my %per_port = split /[|\n]/, $cluster->{coordinator}->safe_psql('postgres', qq{
		SELECT n.nodeport, count(*)
		FROM pg_dist_shard s
		JOIN pg_dist_placement p USING (shardid)
		JOIN pg_dist_node n USING (groupid)
		WHERE s.logicalrelid = '$table'::regclass
		GROUP BY n.nodeport});
	my @names = ('coordinator', 'worker1', 'worker2');
	return join(' ',
		map { "$names[$_]:" . ($per_port{ $cluster->{nodes}[$_]->port } // 0) } 0 .. 2);
}

# The node ('worker1', 'worker2' or 'coordinator') that holds the row of $table whose
# distribution column is the value of the SQL expression $value.
sub shard_node
{
	my ($cluster, $table, $value) = @_;
	my $port = $cluster->{coordinator}->safe_psql('postgres', qq{
		SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
		WHERE p.shardid = get_shard_id_for_distribution_column('$table', $value)});
	my @names = ('coordinator', 'worker1', 'worker2');
	my ($index) = grep { $cluster->{nodes}[$_]->port == $port } 0 .. 2;
	return $names[$index];
}

# The node that holds the marker of $message_id (the markers distributed by message_key).
sub marker_node
{
	my ($cluster, $message_id) = @_;
	return shard_node($cluster, 'inbox.markers', "inbox.message_key('$message_id')");
}

# The number of shard tables of $schema.$table ("$table_<shard id>") present on $node, whatever
# Citus's catalogs say (Citus hides shards from pg_class unless told not to).
sub shard_tables
{
	my ($node, $schema, $table) = @_;
	return $node->safe_psql('postgres', qq{
		SET citus.override_table_visibility = off;
		SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = '$schema' AND c.relkind IN ('r', 'p')
		  AND c.relname ~ '^${table}_[0-9]+\$'});
}

# Inserts $count markers of $consumer, processed $age ago (an interval literal), straight into
# the distributed table in one statement (the view's trigger would write them one at a time).
sub insert_markers
{
	my ($node, $consumer, $count, $age, $prefix) = @_;
	$prefix //= $consumer;
	$node->safe_psql('postgres', qq{
		INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
		SELECT inbox.marker_time_bucket(t), c.id, inbox.marker_time_offset(t),
		       inbox.message_key('$prefix-' || g)
		FROM generate_series(1, $count) g,
		     (SELECT inbox.consumer_id('$consumer') AS id) c,
		     (SELECT now() - interval '$age' AS t) processed});
}

# The error $sql raises on $node, as "SQLSTATE: message" ('' when it succeeds).
sub psql_error
{
	my ($node, $sql, $db) = @_;
	my ($rc, $stdout, $stderr) =
	  $node->psql($db // 'postgres', "\\set VERBOSITY verbose\n$sql");
	return '' if $rc == 0;
	my ($error) = $stderr =~ /ERROR:  (\w{5}: [^\n]*)/;
	return $error // $stderr;
}

# The transactions Citus prepared (two-phase commit) for the coordinator backend $pid, from
# the coordinator's pg_dist_transaction: each prepared transaction is named
# citus_<initiator group>_<pid>_<transaction>_<connection>.
sub remote_prepares
{
	my ($cluster, $pid) = @_;
	return $cluster->{coordinator}->safe_psql('postgres',
		"SELECT count(*) FROM pg_dist_transaction WHERE gid LIKE 'citus\\_0\\_${pid}\\_%'");
}

1;
