# 8 clients deliver 20,000 messages, 30% of them duplicates, each duplicate handed out right after
# its original so that both copies are usually in flight at the same moment. Every account must
# end with exactly the sum of its distinct messages.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('parallel', 'max_connections = 20');

$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
    INSERT INTO accounts SELECT g, 0 FROM generate_series(0, 49) g;
    CREATE TABLE applied_log (message_id text NOT NULL);

    -- 14,000 distinct messages; those with i % 7 < 3 (6,000) are delivered twice, back to back.
    CREATE TABLE deliveries (seq bigint PRIMARY KEY, message_id text, payload jsonb);
    INSERT INTO deliveries
    SELECT row_number() OVER (ORDER BY i, copy), 'msg-' || i,
           jsonb_build_object('account', i % 50, 'amount', i % 997 + 1)
    FROM generate_series(1, 14000) i
    CROSS JOIN LATERAL generate_series(1, CASE WHEN i % 7 < 3 THEN 2 ELSE 1 END) copy;
    CREATE SEQUENCE delivery_seq;

    CREATE FUNCTION credit(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE accounts SET balance = balance + (payload ->> 'amount')::bigint
        WHERE id = (payload ->> 'account')::int;
        INSERT INTO applied_log VALUES (payload ->> 'id');
        PERFORM pg_sleep(random() * 0.002);   -- some work, so that copies overlap
    END $$;
});

is($node->safe_psql('postgres', 'SELECT count(*) FROM deliveries'), '20000', '20,000 deliveries');

$node->pgbench(
    '--no-vacuum --client=8 --jobs=2 --transactions=2500',
    0,
    [qr/number of transactions actually processed: 20000/],
    [qr/^$/],
    '8 clients deliver every message',
    {
        'deliver' => q{
SELECT nextval('delivery_seq') AS seq \gset
SELECT inbox.apply('payments', message_id, 'credit(jsonb)', payload || jsonb_build_object('id', message_id)) FROM deliveries WHERE seq = :seq;
}
    });

is($node->safe_psql('postgres', q{
    SELECT count(*) FROM accounts a
    WHERE balance <> (SELECT coalesce(sum((payload ->> 'amount')::bigint), 0)
                      FROM (SELECT DISTINCT ON (message_id) payload FROM deliveries) m
                      WHERE (m.payload ->> 'account')::int = a.id)}),
    '0', 'every balance equals the sum of its distinct messages');
is($node->safe_psql('postgres', 'SELECT sum(balance) FROM accounts'),
    $node->safe_psql('postgres', q{SELECT sum(i % 997 + 1) FROM generate_series(1, 14000) i}),
    'total credited equals the distinct messages');
is($node->safe_psql('postgres', 'SELECT count(*), count(DISTINCT message_id) FROM applied_log'),
    '14000|14000', 'each message applied exactly once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM inbox.messages WHERE consumer = 'payments'}),
    '14000', 'one marker per distinct message');

$node->stop;
done_testing();
