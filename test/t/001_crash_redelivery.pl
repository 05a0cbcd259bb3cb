# The server dies (immediate stop) while a payment is being applied. After recovery the broker
# redelivers: the payment is applied exactly once. A payment that committed before the crash is
# a duplicate after it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('crash');

$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE TABLE invoices (id text PRIMARY KEY, paid numeric NOT NULL DEFAULT 0);
    INSERT INTO invoices VALUES ('INV-1', 0), ('INV-2', 0);
    CREATE FUNCTION pay(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE invoices SET paid = paid + (payload ->> 'amount')::numeric
        WHERE id = payload ->> 'invoice';
        -- a slow downstream call: the crash happens here
        PERFORM pg_sleep((payload ->> 'sleep')::float8);
    END $$;
    -- registered when deployed: first claims of a consumer not registered yet would wait for
    -- the transaction registering it, the one in flight below
    SELECT inbox.configure_consumer('billing');
});

my $deliver = q{SELECT inbox.apply('billing', 'pay-1', 'pay(jsonb)',
    '{"invoice": "INV-1", "amount": 4182, "sleep": 0}')};

# A payment in flight when the server goes down.
my $in_flight = $node->background_psql('postgres', on_error_stop => 0);
$in_flight->query_until(qr/started/, q{
    \echo started
    SELECT inbox.apply('billing', 'pay-1', 'pay(jsonb)',
        '{"invoice": "INV-1", "amount": 4182, "sleep": 300}');
});
$node->poll_query_until('postgres',
    q{SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep'})
  or die 'the payment never reached its slow step';

# A payment that committed just before.
is($node->safe_psql('postgres', q{SELECT inbox.apply('billing', 'pay-2', 'pay(jsonb)',
    '{"invoice": "INV-2", "amount": 99, "sleep": 0}')}), 't', 'second payment applied');

$node->stop('immediate');
$in_flight->{run}->finish;    # its connection is gone with the server
$node->start;

is($node->safe_psql('postgres', q{SELECT paid FROM invoices WHERE id = 'INV-1'}), '0',
    'the interrupted payment left no trace');
is($node->safe_psql('postgres', q{SELECT count(*) FROM inbox.messages WHERE message_id = 'pay-1'}),
    '0', 'nor a marker');

is($node->safe_psql('postgres', $deliver), 't', 'the redelivery is processed');
is($node->safe_psql('postgres', $deliver), 'f', 'a further copy is a duplicate');
is($node->safe_psql('postgres', q{SELECT paid FROM invoices WHERE id = 'INV-1'}), '4182',
    'paid exactly once');

is($node->safe_psql('postgres', q{SELECT inbox.apply('billing', 'pay-2', 'pay(jsonb)',
    '{"invoice": "INV-2", "amount": 99, "sleep": 0}')}), 'f',
    'the payment committed before the crash is a duplicate after it');
is($node->safe_psql('postgres', q{SELECT paid FROM invoices WHERE id = 'INV-2'}), '99',
    'and was paid once');

$node->stop;
done_testing();
