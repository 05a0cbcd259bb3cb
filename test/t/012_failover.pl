# A streaming-replication pair across failover: markers replicate with the work they protect, a
# standby refuses to claim (it cannot write), and after promotion a redelivery of a message the
# old primary processed is a duplicate on the new one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $primary = inbox_node('failover_primary', '', allows_streaming => 1);
$primary->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE TABLE invoices (id text PRIMARY KEY, paid numeric NOT NULL DEFAULT 0);
    INSERT INTO invoices VALUES ('INV-9', 0);
    CREATE FUNCTION pay(payload jsonb) RETURNS void LANGUAGE sql AS $$
        UPDATE invoices SET paid = paid + (payload ->> 'amount')::numeric WHERE id = 'INV-9'
    $$;
});
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('failover_standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

my $deliver = q{SELECT inbox.apply('billing', 'pay-9', 'pay(jsonb)', '{"amount": 4182}')};
is($primary->safe_psql('postgres', $deliver), 't', 'the primary applies the payment');
$primary->wait_for_catchup($standby);

my ($rc, $stdout, $stderr) = $standby->psql('postgres', "\\set VERBOSITY sqlstate\n$deliver");
isnt($rc, 0, 'a standby cannot claim');
like($stderr, qr/ERROR:  25006/, 'it is a read-only transaction (SQLSTATE 25006)');

$primary->stop('immediate');
$standby->promote;
is($standby->safe_psql('postgres', $deliver), 'f',
    'after failover the redelivery is a duplicate on the new primary');
is($standby->safe_psql('postgres', q{SELECT paid FROM invoices}), '4182', 'paid once');
is($standby->safe_psql('postgres',
    q{SELECT inbox.apply('billing', 'pay-10', 'pay(jsonb)', '{"amount": 1}')}), 't',
    'and new messages are processed');

$standby->stop;
done_testing();
