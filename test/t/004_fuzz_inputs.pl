# Fuzzing the public functions. First, property-based: thousands of random calls of inbox.apply
# (keys of random length and content around the byte limits, NULLs, any function of the catalog
# as the handler, random payloads), each checked against an independent statement of the
# contract: the SQLSTATE a bad input must raise, and "a marker appears exactly when apply answers
# true". Then sqlsmith's random queries. Throughout, the server must never crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('fuzz');

$node->safe_psql('postgres', q{
    CREATE EXTENSION inbox;
    CREATE ROLE regress_fuzzer LOGIN;
    GRANT USAGE ON SCHEMA inbox TO regress_fuzzer;
    GRANT EXECUTE ON FUNCTION inbox.claim(text, text), inbox.forget(text, text),
        inbox.apply(text, text, regprocedure, jsonb) TO regress_fuzzer;

    -- What the contract says apply must raise for these inputs, or NULL when they are valid;
    -- arguments are checked in order.
    CREATE FUNCTION expected_error(consumer text, message_id text, fn regprocedure, payload jsonb)
    RETURNS text LANGUAGE sql STABLE AS $$
        SELECT CASE
            WHEN consumer IS NULL THEN '22004'
            WHEN consumer = '' THEN '22023'
            WHEN octet_length(consumer) > 64 THEN '22001'
            WHEN message_id IS NULL THEN '22004'
            WHEN message_id = '' THEN '22023'
            WHEN octet_length(message_id) > 128 THEN '22001'
            WHEN fn IS NULL THEN '22004'
            WHEN p.oid IS NULL OR p.prokind <> 'f' OR p.proretset
                 OR NOT (p.pronargs = 0 OR (p.pronargs = 1 AND p.proargtypes[0] = 'jsonb'::regtype))
                THEN '42883'
            WHEN NOT has_function_privilege(fn, 'EXECUTE') THEN '42501'
            WHEN p.pronargs = 1 AND p.proisstrict AND payload IS NULL THEN '22004'
        END
        FROM (SELECT) AS one LEFT JOIN pg_proc p ON p.oid = fn
    $$;

    -- The fuzzer may not read markers; this answers for it.
    CREATE FUNCTION marker_exists(consumer text, message_id text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
        SELECT EXISTS (SELECT FROM inbox.messages m
                       WHERE m.consumer = $1 COLLATE "C" AND m.message_id = $2 COLLATE "C")
    $$;

    CREATE FUNCTION random_key(max_chars int) RETURNS text LANGUAGE sql VOLATILE AS $$
        SELECT CASE WHEN random() < 0.03 THEN NULL ELSE
            (SELECT coalesce(string_agg((ARRAY['a', 'Z', '0', ' ', '-', '''', '"', '\', U&'\00E9',
                                      U&'\20AC', U&'\+01F600', '%', '_'])[1 + floor(random() * 13)::int], ''), '')
             FROM generate_series(1, (ARRAY[0, 1, 2, 32, 63, 64, 65, 127, 128, 129,
                                            floor(random() * max_chars)::int])[1 + floor(random() * 11)::int]))
        END
    $$;

    CREATE TABLE findings (i int, consumer text, message_id text, fn oid, payload jsonb,
                           expected text, outcome text, marker_before boolean, marker_after boolean);
    GRANT INSERT ON findings TO regress_fuzzer;
    GRANT EXECUTE ON FUNCTION marker_exists(text, text) TO regress_fuzzer;
});

# Handlers are drawn from the whole catalog, weighted towards the ones apply accepts.
my $calls = 3000;
$node->safe_psql('postgres', qq{
    SET ROLE regress_fuzzer;
    SELECT setseed(0.42);
    DO \$\$
    DECLARE
        c text; m text; f oid; p jsonb; expected text; outcome text; before boolean;
        candidates oid[] := ARRAY(SELECT oid FROM pg_proc ORDER BY oid);
        handlers oid[] := ARRAY(SELECT oid FROM pg_proc WHERE prokind = 'f' AND NOT proretset
                                AND (pronargs = 0 OR (pronargs = 1 AND proargtypes[0] = 'jsonb'::regtype))
                                AND proname NOT LIKE 'pg\\_%' ORDER BY oid);
    BEGIN
        FOR i IN 1 .. $calls LOOP
            c := random_key(70);
            m := random_key(140);
            f := CASE WHEN random() < 0.03 THEN NULL
                      WHEN random() < 0.5 THEN handlers[1 + floor(random() * cardinality(handlers))::int]
                      ELSE candidates[1 + floor(random() * cardinality(candidates))::int] END;
            p := CASE WHEN random() < 0.2 THEN NULL
                      ELSE jsonb_build_object(coalesce(m, 'k'), random(), 'nested', jsonb_build_array(c)) END;
            expected := expected_error(c, m, f::regprocedure, p);
            before := c IS NOT NULL AND m IS NOT NULL AND marker_exists(c, m);
            BEGIN
                outcome := inbox.apply(c, m, f::regprocedure, p)::text;
            EXCEPTION WHEN OTHERS THEN
                outcome := SQLSTATE;
            END;
            INSERT INTO findings VALUES (i, c, m, f, p, expected, outcome, before,
                c IS NOT NULL AND m IS NOT NULL AND marker_exists(c, m));
        END LOOP;
    END \$\$;
});

is($node->safe_psql('postgres', 'SELECT count(*) FROM findings'), $calls, "$calls random calls");
is($node->safe_psql('postgres', q{
    SELECT string_agg(format('%s: apply(%L, %L, %s, %L): expected %s, got %s', i, consumer,
                             message_id, fn::regprocedure, payload, expected, outcome), E'\n')
    FROM findings WHERE expected IS NOT NULL AND outcome IS DISTINCT FROM expected}),
    '', 'every bad input raised the SQLSTATE the contract names');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM findings WHERE expected IS NOT NULL AND marker_after AND NOT marker_before}),
    '0', 'no bad input wrote a marker');
is($node->safe_psql('postgres', q{
    SELECT count(*) FROM findings WHERE expected IS NULL AND NOT (
        (outcome = 'true' AND marker_after AND NOT marker_before)
        OR (outcome = 'false' AND marker_before AND marker_after)
        OR (outcome NOT IN ('true', 'false') AND marker_before = marker_after))}),
    '0', 'a marker appears exactly when apply answers true, and a handler error leaves none');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM findings WHERE outcome = 'true'}),
    '>', 100, 'the random calls reached handlers many times');
cmp_ok($node->safe_psql('postgres', q{
    SELECT count(*) FROM findings f JOIN pg_proc p ON p.oid = f.fn
    WHERE f.outcome = 'true' AND p.pronargs = 1}),
    '>', 20, 'handlers taking the payload among them');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT expected, ',') FROM findings}),
    '22001,22004,22023,42501,42883', 'and exercised every kind of bad input');

# sqlsmith: random queries over everything the fuzzer role can reach, inbox functions included.
SKIP: {
    skip 'sqlsmith is not installed', 2 unless `which sqlsmith`;
    my $target = 'host=' . $node->host . ' port=' . $node->port
      . ' dbname=postgres user=regress_fuzzer';
    is(system('sqlsmith', "--target=$target", '--max-queries=3000', '--seed=42',
        '--exclude-catalog'), 0, 'sqlsmith ran 3000 queries');
    is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server survived sqlsmith');
}

$node->stop;
done_testing();
