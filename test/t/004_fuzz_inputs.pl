# Fuzzing the public functions. First, property-based: thousands of random calls of inbox.apply
# (keys of random length and content around the byte limits, NULLs, any function of the catalog
# as the handler, OIDs of dropped functions, 0 and out-of-range OIDs, random payloads), each
# checked against an independent statement of the
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

    -- What the contract says a function must raise for these keys, or NULL when they are valid;
    -- arguments are checked in order.
    CREATE FUNCTION key_error(consumer text, message_id text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE
            WHEN consumer IS NULL THEN '22004'
            WHEN consumer = '' THEN '22023'
            WHEN octet_length(consumer) > 64 THEN '22001'
            WHEN message_id IS NULL THEN '22004'
            WHEN message_id = '' THEN '22023'
            WHEN octet_length(message_id) > 128 THEN '22001'
        END
    $$;

    -- The same for apply.
    CREATE FUNCTION expected_error(consumer text, message_id text, fn regprocedure, payload jsonb)
    RETURNS text LANGUAGE sql STABLE AS $$
        SELECT coalesce(key_error(consumer, message_id), CASE
            WHEN fn IS NULL THEN '22004'
            WHEN p.oid IS NULL OR p.prokind <> 'f' OR p.proretset
                 OR NOT (p.pronargs = 0 OR (p.pronargs = 1 AND p.proargtypes[0] = 'jsonb'::regtype))
                 OR (t.typtype = 'p' AND p.prorettype NOT IN ('void'::regtype, 'record'::regtype))
                THEN '42883'
            WHEN NOT has_function_privilege(fn, 'EXECUTE') THEN '42501'
            WHEN p.pronargs = 1 AND p.proisstrict AND payload IS NULL THEN '22004'
        END)
        FROM (SELECT) AS one LEFT JOIN pg_proc p ON p.oid = fn LEFT JOIN pg_type t ON t.oid = p.prorettype
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

    -- OIDs that name nothing any more: functions and tables created and dropped.
    CREATE TABLE dropped (kind text, object oid);
    DO $$
    DECLARE f oid; t oid;
    BEGIN
        FOR i IN 1 .. 5 LOOP
            EXECUTE format('CREATE FUNCTION gone_%s(jsonb) RETURNS void LANGUAGE sql AS ''SELECT''', i);
            f := format('gone_%s(jsonb)', i)::regprocedure;
            EXECUTE format('DROP FUNCTION gone_%s(jsonb)', i);
            EXECUTE format('CREATE TABLE gone_%s (id int PRIMARY KEY, version int)', i);
            t := format('gone_%s', i)::regclass;
            EXECUTE format('DROP TABLE gone_%s', i);
            INSERT INTO dropped VALUES ('function', f), ('table', t);
        END LOOP;
    END $$;
    -- Handlers are drawn from the whole catalog, dropped functions and OIDs of nothing, and,
    -- weighted towards them, from the functions apply accepts: taking no argument, or (jsonb),
    -- each kind on its own, so that how many the catalog has does not decide how often.
    CREATE TABLE candidates AS
        SELECT oid AS fn FROM pg_proc
        UNION ALL SELECT object FROM dropped WHERE kind = 'function'
        UNION ALL VALUES (0::oid), (4294967295::oid), (1::oid);
    CREATE TABLE handlers AS
        SELECT oid AS fn FROM pg_proc WHERE prokind = 'f' AND NOT proretset AND pronargs = 0
            AND proname NOT LIKE 'pg\\_%';
    CREATE TABLE payload_handlers AS
        SELECT oid AS fn FROM pg_proc WHERE prokind = 'f' AND NOT proretset AND pronargs = 1
            AND proargtypes[0] = 'jsonb'::regtype AND proname NOT LIKE 'pg\\_%';
    GRANT SELECT ON dropped, candidates, handlers, payload_handlers TO regress_fuzzer;
    GRANT EXECUTE ON FUNCTION marker_exists(text, text) TO regress_fuzzer;
});

my $calls = 3000;
$node->safe_psql('postgres', qq{
    SET ROLE regress_fuzzer;
    SELECT setseed(0.42);
    DO \$\$
    DECLARE
        c text; m text; f oid; p jsonb; expected text; outcome text; before boolean;
        candidates oid[] := ARRAY(SELECT fn FROM candidates ORDER BY fn);
        handlers oid[] := ARRAY(SELECT fn FROM handlers ORDER BY fn);
        payload_handlers oid[] := ARRAY(SELECT fn FROM payload_handlers ORDER BY fn);
    BEGIN
        FOR i IN 1 .. $calls LOOP
            c := random_key(70);
            m := random_key(140);
            f := CASE WHEN random() < 0.03 THEN NULL
                      WHEN random() < 0.25 THEN handlers[1 + floor(random() * cardinality(handlers))::int]
                      WHEN random() < 0.33 THEN payload_handlers[1 + floor(random() * cardinality(payload_handlers))::int]
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
# A call with valid inputs reaches its handler (random keys do not repeat: its message is new):
# about 200 of the 3000 (both keys are within their limits in about a fifth of the calls, and a
# handler apply accepts, with a payload it takes, is drawn in under half of those). Which
# functions those are depends on the catalog, which each major changes (the same seed draws
# other functions), and so does how many run to completion rather than raise (a cast of the
# payload to int, say): 114 on 15, 93 on 19, of 201 and 195.
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM findings WHERE expected IS NULL}),
    '>', 150, 'the random calls reached handlers many times');
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM findings WHERE outcome = 'true'}),
    '>', 50, 'and many of those handlers ran to completion');
cmp_ok($node->safe_psql('postgres', q{
    SELECT count(*) FROM findings f JOIN pg_proc p ON p.oid = f.fn
    WHERE f.outcome = 'true' AND p.pronargs = 1}),
    '>', 20, 'handlers taking the payload among them');
is($node->safe_psql('postgres', q{SELECT string_agg(DISTINCT expected, ',') FROM findings}),
    '22001,22004,22023,42501,42883', 'and exercised every kind of bad input');

# The natural-idempotency functions with any relation OID: every kind of relation of the
# catalog (tables, partitioned tables, views, indexes, sequences, TOAST tables, catalogs),
# dropped tables, 0 and out-of-range OIDs, with rows that fit some tables and not others. Each
# call either writes (or finds its row) or fails with an error docs/outcomes.md lists (0A000 for a
# system catalog, which ON CONFLICT refuses), never an internal error.
$node->safe_psql('postgres', q{
    CREATE TABLE fuzz_target (id int PRIMARY KEY, version int, note text);
    CREATE TABLE fuzz_parted (id int, version int, PRIMARY KEY (id)) PARTITION BY RANGE (id);
    CREATE TABLE fuzz_parted_1 PARTITION OF fuzz_parted FOR VALUES FROM (0) TO (1000);
    CREATE TABLE fuzz_deferred (id int PRIMARY KEY DEFERRABLE, version int);
    CREATE VIEW fuzz_view AS SELECT * FROM fuzz_target;
    CREATE SEQUENCE fuzz_sequence;
    GRANT INSERT, UPDATE, SELECT ON fuzz_target, fuzz_parted, fuzz_deferred TO regress_fuzzer;
    GRANT EXECUTE ON FUNCTION inbox.upsert_versioned(regclass, jsonb, name),
        inbox.insert_once(regclass, jsonb) TO regress_fuzzer;
    CREATE TABLE relation_findings (i int, target oid, call text, outcome text);
    GRANT INSERT ON relation_findings TO regress_fuzzer;
});
$node->safe_psql('postgres', q{
    SET ROLE regress_fuzzer;
    SELECT setseed(0.24);
    DO $$
    DECLARE
        targets oid[] := ARRAY(SELECT oid FROM pg_class
                               UNION ALL SELECT object FROM dropped WHERE kind = 'table'
                               UNION ALL VALUES (0::oid), (4294967295::oid) ORDER BY 1);
        mine oid[] := ARRAY['fuzz_target', 'fuzz_parted', 'fuzz_deferred', 'fuzz_view',
                            'fuzz_sequence']::regclass[]::oid[];
        rows jsonb[] := ARRAY['{"id": 1, "version": 1}', '{"id": 2, "version": null}',
                              '{"id": "x", "version": 2}', '{"version": 3}', '[1]', '"s"',
                              '{"id": 3, "version": 4, "note": "n", "nope": 1}', '{"oid": 1}',
                              '{"id": 4, "version": 5, "note": null}']::jsonb[];
        t oid; r jsonb; c text; o text;
    BEGIN
        FOR i IN 1 .. 1500 LOOP
            t := CASE WHEN random() < 0.5 THEN mine[1 + floor(random() * 5)::int]
                      ELSE targets[1 + floor(random() * cardinality(targets))::int] END;
            r := rows[1 + floor(random() * cardinality(rows))::int];
            c := CASE WHEN random() < 0.5 THEN 'upsert_versioned' ELSE 'insert_once' END;
            BEGIN
                IF c = 'upsert_versioned' THEN
                    o := inbox.upsert_versioned(t::regclass, r)::text;
                ELSE
                    o := inbox.insert_once(t::regclass, r)::text;
                END IF;
            EXCEPTION WHEN OTHERS THEN
                o := SQLSTATE;
            END;
            INSERT INTO relation_findings VALUES (i, t, c, o);
        END LOOP;
    END $$;
});
is($node->safe_psql('postgres', q{
    SELECT string_agg(DISTINCT outcome, ',' ORDER BY outcome) FROM relation_findings
    WHERE outcome NOT IN ('true', 'false', '0A000', '22004', '22023', '22P02', '23502', '42501',
                          '42703', '42809', '42P01', '42P10')}),
    '', 'random relations: every call wrote or failed with a documented SQLSTATE');
cmp_ok($node->safe_psql('postgres',
        q{SELECT count(*) FROM relation_findings WHERE outcome IN ('true', 'false')}),
    '>', 30, 'and many calls reached the statement');

# The entry points of 1.1 with the same kinds of input: receive, complete, claim_batch,
# apply_batch (handlers from the whole catalog, dropped, 0 and out-of-range OIDs; messages of
# every shape) and configure_consumer. Each call raises exactly the SQLSTATE the contract names
# for its first bad argument, or succeeds, writing the markers it says it wrote and no other.
# Consumers are mostly drawn from a few names, so that calls meet each other's markers.
$node->safe_psql('postgres', q{
    GRANT EXECUTE ON FUNCTION inbox.receive(text, text, jsonb, boolean),
        inbox.complete(text, text, jsonb), inbox.claim_batch(text, text[]),
        inbox.apply_batch(text, regprocedure, jsonb),
        inbox.configure_consumer(text, interval, integer, regrole) TO regress_fuzzer;

    CREATE FUNCTION marker_count(consumer text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
        SELECT count(*) FROM inbox.messages m WHERE m.consumer = $1 COLLATE "C"
    $$;
    GRANT EXECUTE ON FUNCTION marker_count(text) TO regress_fuzzer;

    -- What apply_batch must raise for its messages, after the consumer and the handler.
    CREATE FUNCTION messages_error(messages jsonb, strict_handler boolean) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE
            WHEN messages IS NULL THEN '22004'
            WHEN jsonb_typeof(messages) <> 'array' THEN '22023'
            ELSE coalesce(
                (SELECT e FROM (SELECT i, CASE
                        WHEN jsonb_typeof(m) <> 'object' THEN '22023'
                        WHEN jsonb_typeof(m -> 'id') IS DISTINCT FROM 'string' THEN '22023'
                        ELSE key_error('c', m ->> 'id') END AS e
                     FROM jsonb_array_elements(messages) WITH ORDINALITY AS a(m, i)) x
                 WHERE e IS NOT NULL ORDER BY i LIMIT 1),
                CASE WHEN strict_handler AND EXISTS (
                    SELECT FROM jsonb_array_elements(messages) m
                    WHERE coalesce(jsonb_typeof(m -> 'payload'), 'null') = 'null') THEN '22004' END)
        END
    $$;

    CREATE FUNCTION not_yours() RETURNS void LANGUAGE sql AS 'SELECT';
    REVOKE EXECUTE ON FUNCTION not_yours() FROM PUBLIC;

    CREATE TABLE findings_1_1 (i int, call text, expected text, outcome text, verdict boolean);
    GRANT INSERT ON findings_1_1 TO regress_fuzzer;
});
$node->safe_psql('postgres', qq{
    SET ROLE regress_fuzzer;
    SELECT setseed(0.11);
    DO \$\$
    DECLARE
        c text; m text; f oid; p jsonb; w boolean; ids text[]; msgs jsonb; ret interval; lim int;
        call text; expected text; outcome text; verdict boolean; before bigint; processed bigint;
        answered bigint; claimed text[];
        candidates oid[] := ARRAY(SELECT fn FROM candidates ORDER BY fn);
        handlers oid[] := ARRAY(SELECT fn FROM handlers ORDER BY fn);
        payload_handlers oid[] := ARRAY(SELECT fn FROM payload_handlers ORDER BY fn);
        shapes jsonb[] := ARRAY['7', '{"payload": {}}', '{"id": 5}', '{"id": null}', '"x"']::jsonb[];
    BEGIN
        FOR i IN 1 .. $calls LOOP
            c := CASE WHEN random() < 0.85 THEN 'c' || floor(random() * 4)::int ELSE random_key(70) END;
            m := CASE WHEN random() < 0.5 THEN 'm' || floor(random() * 40)::int ELSE random_key(140) END;
            p := CASE WHEN random() < 0.3 THEN NULL ELSE jsonb_build_object('v', floor(random() * 3)::int) END;
            -- a random message array: good messages, repeated ids, and now and then a bad one
            msgs := CASE WHEN random() < 0.03 THEN NULL WHEN random() < 0.03 THEN '{"id": "m"}'
                ELSE (SELECT coalesce(jsonb_agg(CASE WHEN random() < 0.05
                                                     THEN shapes[1 + floor(random() * 5)::int]
                                                     WHEN random() < 0.3 THEN jsonb_build_object('id', random_key(140))
                                                     ELSE jsonb_build_object('id', 'm' || floor(random() * 40)::int,
                                                                             'payload', p) END), '[]')
                      FROM generate_series(1, floor(random() * 4)::int)) END;
            ids := CASE WHEN random() < 0.03 THEN NULL
                   ELSE ARRAY(SELECT CASE WHEN random() < 0.3 THEN random_key(140)
                                          ELSE 'm' || floor(random() * 40)::int END
                              FROM generate_series(1, floor(random() * 4)::int)) END;
            f := CASE WHEN random() < 0.03 THEN NULL
                      WHEN random() < 0.05 THEN 'not_yours()'::regprocedure
                      WHEN random() < 0.25 THEN handlers[1 + floor(random() * cardinality(handlers))::int]
                      WHEN random() < 0.33 THEN payload_handlers[1 + floor(random() * cardinality(payload_handlers))::int]
                      ELSE candidates[1 + floor(random() * cardinality(candidates))::int] END;
            w := CASE WHEN random() < 0.05 THEN NULL ELSE random() < 0.5 END;
            ret := (ARRAY[NULL, '1 s', '0.5 s', '-1 day', '30 days', '1 mon']::interval[])[1 + floor(random() * 6)::int];
            lim := (ARRAY[NULL, 0, 1, 5, -3])[1 + floor(random() * 5)::int];
            before := CASE WHEN key_error(c, 'm') IS NULL THEN marker_count(c) END;
            verdict := true;
            outcome := 'ok';
            BEGIN
                CASE i % 5
                WHEN 0 THEN
                    call := format('receive(%L, %L, %L, %L)', c, m, p, w);
                    expected := coalesce(key_error(c, m), CASE WHEN w IS NULL THEN '22004' END);
                    outcome := (inbox.receive(c, m, p, w)).outcome::text;
                    verdict := (outcome = 'processed') = (marker_count(c) = before + 1)
                               AND (outcome = 'processed' OR marker_count(c) = before);
                WHEN 1 THEN
                    call := format('complete(%L, %L, %L)', c, m, p);
                    expected := coalesce(key_error(c, m), CASE WHEN p IS NULL THEN '22004'
                                                               WHEN NOT marker_exists(c, m) THEN '55000' END);
                    PERFORM inbox.complete(c, m, p);
                    verdict := marker_count(c) = before;
                WHEN 2 THEN
                    call := format('claim_batch(%L, %L)', c, ids);
                    expected := coalesce(key_error(c, 'm'), CASE WHEN ids IS NULL THEN '22004' END,
                                         (SELECT e FROM (SELECT k, CASE WHEN id IS NULL THEN '22004'
                                                                        ELSE key_error('c', id) END AS e
                                                         FROM unnest(ids) WITH ORDINALITY AS u(id, k)) x
                                          WHERE e IS NOT NULL ORDER BY k LIMIT 1));
                    claimed := ARRAY(SELECT inbox.claim_batch(c, ids));
                    verdict := marker_count(c) = before + cardinality(claimed)
                               AND cardinality(claimed) = (SELECT count(DISTINCT id) FROM unnest(claimed) id)
                               AND (SELECT bool_and(marker_exists(c, id)) FROM unnest(claimed) id) IS NOT FALSE;
                WHEN 3 THEN
                    call := format('apply_batch(%L, %s, %L)', c, f::regprocedure, msgs);
                    expected := coalesce(expected_error(c, 'm', f::regprocedure, '{}'),
                                         messages_error(msgs, (SELECT proisstrict AND pronargs = 1
                                                               FROM pg_proc WHERE oid = f)));
                    SELECT count(*) FILTER (WHERE b.outcome = 'processed'), count(*)
                    INTO processed, answered FROM inbox.apply_batch(c, f::regprocedure, msgs) b;
                    verdict := marker_count(c) = before + processed
                               AND answered = jsonb_array_length(msgs);
                ELSE
                    call := format('configure_consumer(%L, %L, %L)', c, ret, lim);
                    expected := coalesce(key_error(c, 'm'), CASE WHEN ret < '1 s' THEN '22023'
                                                                 WHEN lim < 1 THEN '22023' END);
                    PERFORM inbox.configure_consumer(c, ret, lim);
                END CASE;
            EXCEPTION WHEN OTHERS THEN
                outcome := SQLSTATE;
            END;
            INSERT INTO findings_1_1 VALUES (i, call, expected, outcome, verdict);
        END LOOP;
    END \$\$;
});
is($node->safe_psql('postgres', q{
    SELECT string_agg(format('%s: %s: expected %s, got %s', i, call, coalesce(expected, 'success'),
                             outcome), E'\n' ORDER BY i)
    FROM findings_1_1
    WHERE CASE WHEN expected IS NULL THEN outcome !~ '^[a-z]' ELSE outcome IS DISTINCT FROM expected END}),
    '', 'the entry points of 1.1: every bad input raised the SQLSTATE the contract names, and only those');
is($node->safe_psql('postgres', q{
    SELECT string_agg(format('%s: %s: %s', i, call, outcome), E'\n' ORDER BY i)
    FROM findings_1_1 WHERE NOT verdict}),
    '', 'and each call wrote exactly the markers it answered for');
is($node->safe_psql('postgres', q{
    SELECT string_agg(DISTINCT left(call, strpos(call, '(') - 1) || ':' || expected, ',' ORDER BY left(call, strpos(call, '(') - 1) || ':' || expected)
    FROM findings_1_1 WHERE expected IS NOT NULL}),
    'apply_batch:22001,apply_batch:22004,apply_batch:22023,apply_batch:42501,apply_batch:42883,'
      . 'claim_batch:22001,claim_batch:22004,claim_batch:22023,complete:22001,complete:22004,'
      . 'complete:22023,complete:55000,configure_consumer:22001,configure_consumer:22004,'
      . 'configure_consumer:22023,receive:22001,receive:22004,receive:22023',
    'and exercised every kind of bad input of each');

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
