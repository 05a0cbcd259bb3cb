-- The library's inbox.relay_take and inbox.relay_done (made in C, src/outbox/direct_take.cpp and
-- direct_done.cpp) against inbox.relay_take_messages and inbox.relay_done_messages, the
-- statements the SQL edition (1.4) serves them with, and against the library's calls on tables
-- that only the statements serve (a trigger on them): the same messages taken in the same order,
-- the same attempts, the same messages made dead, the same rows left and the same delivered
-- records, through one scenario of keys, destinations, settlements (kept or not, repeated ids,
-- unknown ones, dead messages), expired leases and the dead-on-take rule. A change to either that
-- the other does not follow fails here. (Concurrency, skipped
-- locks and the scan floor: isolation outbox_relays, outbox_key_order, outbox_scan_floor.)
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;

-- One take by the edition: the messages it returned, by their number (payload n), with attempts.
CREATE FUNCTION take_by(edition text, relay text, max_messages integer,
                        destinations text[] DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    taken text;
BEGIN
    IF edition = 'sql' THEN
        SELECT string_agg(format('%s@%s', t.payload ->> 'n', t.attempt), ' ' ORDER BY o)
        INTO taken
        FROM inbox.relay_take_messages(relay, max_messages, '30 seconds', destinations)
             WITH ORDINALITY t(id, destination, key, headers, payload, attempt, payload_bytes, o);
    ELSE
        SELECT string_agg(format('%s@%s', t.payload ->> 'n', t.attempt), ' ' ORDER BY o)
        INTO taken
        FROM inbox.relay_take(relay, max_messages, '30 seconds', destinations)
             WITH ORDINALITY t(id, destination, key, headers, payload, attempt, payload_bytes, o);
    END IF;
    RETURN format('%s took %s', relay, coalesce(taken, 'nothing'));
END $$;

-- One relay_done by the edition.
CREATE FUNCTION done_by(edition text, ids uuid[]) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    IF edition = 'sql' THEN
        RETURN format('done %s', inbox.relay_done_messages(ids));
    END IF;
    RETURN format('done %s', inbox.relay_done(ids));
END $$;

-- The ids of the messages numbered ns.
CREATE FUNCTION ids_of(VARIADIC ns integer[]) RETURNS uuid[]
LANGUAGE sql AS $$
    SELECT array_agg(m.id) FROM inbox.outbox_messages m WHERE (m.payload ->> 'n')::int = ANY (ns)
$$;

-- The leases end: as if their time had passed.
CREATE FUNCTION expire_leases() RETURNS void
LANGUAGE sql AS $$
    UPDATE inbox.outbox_messages SET not_before = now() - interval '1 hour'
    WHERE leased_by IS NOT NULL
$$;

-- The whole scenario, from an empty outbox and floor: what each step answered, then every
-- message's row, as the lines of `label`. Each step commits: a take leases no message that its
-- own transaction wrote (sent, leased, failed, released, its lease ended by hand), as a relay's
-- transaction never holds the writes of the others.
CREATE TABLE scenario_lines (label text NOT NULL, step bigserial, line text);
-- A step's answer, committed with the step.
CREATE PROCEDURE say(label text, line text)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO scenario_lines (label, line) VALUES (label, line);
    COMMIT;
END $$;
CREATE PROCEDURE take_scenario(edition text, label text)
LANGUAGE plpgsql AS $$
DECLARE
    sent RECORD;
BEGIN
    DELETE FROM inbox.outbox_messages;
    DELETE FROM inbox.outbox_delivered;
    UPDATE inbox.outbox_scan_floor SET floor = 0, checkpoint_ordinal = 0, checkpoint_xid = '0';
    FOR sent IN SELECT * FROM (VALUES
            (1, 'a', 'k1'), (2, 'a', 'k1'), (3, 'a', 'k2'), (4, 'b', NULL), (5, 'b', 'k1'),
            (6, 'a', NULL), (7, 'c', 'k3'), (8, 'a', 'k1'), (9, 'c', NULL), (10, 'c', 'k3'))
            s(n, destination, key) LOOP
        PERFORM inbox.send(sent.destination, jsonb_build_object('n', sent.n), sent.key);
    END LOOP;
    -- (the cause a claim before the send would have given: the delivered record keeps it)
    UPDATE inbox.outbox_messages SET cause_consumer = 'billing', cause_message_id = 'm-1'
    WHERE payload ->> 'n' = '1';
    COMMIT;
    -- One message of a key at a time, in order; the limit counts what is taken.
    CALL say(label, take_by(edition, 'r1', 2));
    CALL say(label, take_by(edition, 'r2', 10, '{b}'));
    CALL say(label, take_by(edition, 'r3', 1, '{c, NULL}'));
    CALL say(label, take_by(edition, 'r4', 10));
    CALL say(label, take_by(edition, 'r4', 10));
    -- Settled: the key's next goes out; failed, due again at once: taken again, second attempt.
    CALL say(label, done_by(edition, ids_of(1, 4)));
    CALL say(label, format('failed %s', inbox.relay_failed(ids_of(3), 'refused', '0 seconds')));
    CALL say(label, take_by(edition, 'r1', 10));
    -- Expired leases go to the next relay, with one more attempt; at the limit, dead instead
    -- (and their key's next message waits for the next take).
    PERFORM expire_leases();
    COMMIT;
    CALL say(label, take_by(edition, 'r5', 3));
    CALL say(label, take_by(edition, 'r5', 10));
    PERFORM set_config('inbox.outbox_max_attempts', '2', false);
    PERFORM expire_leases();
    COMMIT;
    CALL say(label, take_by(edition, 'r6', 10));
    CALL say(label, take_by(edition, 'r6', 10));
    PERFORM set_config('inbox.outbox_max_attempts', '10', false);
    CALL say(label, format('released %s', inbox.relay_release(ids_of(2, 3, 5, 7))));
    CALL say(label, take_by(edition, 'r7', 10));
    INSERT INTO scenario_lines (label, line)
    SELECT label, format('%s: %s attempts %s, %s%s', m.payload ->> 'n',
                         CASE WHEN m.dead_at IS NOT NULL THEN 'dead'
                              WHEN m.leased_by IS NOT NULL THEN 'leased by ' || m.leased_by
                              ELSE 'pending' END,
                         m.attempts, coalesce(m.last_error, 'no error'),
                         CASE WHEN m.leased_by IS NOT NULL AND m.not_before <= now()
                              THEN ' (lease over)' ELSE '' END)
    FROM inbox.outbox_messages m ORDER BY m.ordinal;
    -- Settled whatever their state (leased, pending, dead: a late relay did publish it), each
    -- once however often it is named, an unknown id or a NULL settling nothing; with retention
    -- 0, deleted without a record.
    CALL say(label, done_by(edition, ids_of(2, 3, 5, 2) || ARRAY[NULL, gen_random_uuid()]));
    PERFORM set_config('inbox.outbox_retention', '0', false);
    CALL say(label, done_by(edition, ids_of(7, 8)));
    RESET inbox.outbox_retention;
    CALL say(label, done_by(edition, ids_of(10, 6, 9)));
    INSERT INTO scenario_lines (label, line)
    SELECT label, format('left: %s', string_agg(m.payload ->> 'n', ' ' ORDER BY m.ordinal))
    FROM inbox.outbox_messages m;
    INSERT INTO scenario_lines (label, line)
    SELECT label, format('record: %s %s attempts %s, %s, cause %s, delivered after its send %s',
                         d.destination, coalesce(d.key, '-'), d.attempts,
                         coalesce(d.last_error, 'no error'),
                         coalesce(d.cause_consumer || ' ' || d.cause_message_id, '-'),
                         d.delivered_at >= d.created_at) AS line
    FROM inbox.outbox_delivered d ORDER BY line;
    RESET inbox.outbox_max_attempts;
END $$;
-- The lines of a scenario, numbered.
CREATE FUNCTION lines_of(scenario text) RETURNS TABLE (step bigint, line text)
LANGUAGE sql AS $$
    SELECT row_number() OVER (ORDER BY l.step), l.line FROM scenario_lines l
    WHERE l.label = scenario
$$;

CALL take_scenario('library', 'library');
CALL take_scenario('sql', 'sql_edition');
-- Triggers on the tables: the library leaves the take and the settlement to the statements.
-- Each trigger counts what it saw: it runs only if a statement wrote the rows.
CREATE TABLE outbox_writes_seen (what text);
CREATE FUNCTION outbox_touched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO public.outbox_writes_seen VALUES ('deletes');
        RETURN OLD;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO public.outbox_writes_seen VALUES ('records');
    ELSIF NEW.leased_by IS DISTINCT FROM OLD.leased_by AND NEW.leased_by IS NOT NULL THEN
        INSERT INTO public.outbox_writes_seen VALUES ('leases');
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER outbox_touched BEFORE UPDATE OR DELETE ON inbox.outbox_messages
    FOR EACH ROW EXECUTE FUNCTION outbox_touched();
CALL take_scenario('library', 'library_with_trigger');
DROP TRIGGER outbox_touched ON inbox.outbox_messages;
SELECT what, count(*) AS seen_with_a_trigger_on_the_messages
FROM outbox_writes_seen GROUP BY what ORDER BY what;
TRUNCATE outbox_writes_seen;
-- A trigger on the delivered records alone: the settlement goes to the statements still.
CREATE TRIGGER outbox_touched BEFORE INSERT ON inbox.outbox_delivered
    FOR EACH ROW EXECUTE FUNCTION outbox_touched();
CALL take_scenario('library', 'library_with_record_trigger');
DROP TRIGGER outbox_touched ON inbox.outbox_delivered;
DROP FUNCTION outbox_touched();
SELECT what, count(*) AS seen_with_a_trigger_on_the_records
FROM outbox_writes_seen GROUP BY what ORDER BY what;
DROP TABLE outbox_writes_seen;

SELECT l.line, l.line = s.line AS same_in_the_sql_edition,
       l.line = t.line AS same_with_a_trigger, l.line = r.line AS same_with_a_record_trigger
FROM lines_of('library') l FULL JOIN lines_of('sql_edition') s USING (step)
     FULL JOIN lines_of('library_with_trigger') t USING (step)
     FULL JOIN lines_of('library_with_record_trigger') r USING (step)
ORDER BY step;

-- A committed message this transaction locked before its take (SELECT ... FOR UPDATE), which
-- writes no version of it, is taken by both.
DELETE FROM inbox.outbox_messages;
SELECT inbox.send('own', '{"n": 1}') IS NOT NULL AS sent;
CREATE FUNCTION take_own_locked(edition text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM FROM inbox.outbox_messages FOR UPDATE;
    RETURN take_by(edition, 'r1', 10);
END $$;
BEGIN;
SELECT take_own_locked('library') AS library;
ROLLBACK;
BEGIN;
SELECT take_own_locked('sql') AS sql_edition;
ROLLBACK;

-- A lease is a write: both refuse it in a read-only transaction (25006), as on a standby.
CREATE FUNCTION take_sqlstate(edition text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN take_by(edition, 'r1', 10);
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
SELECT inbox.send('read-only', '{"n": 2}') IS NOT NULL AS sent;
-- (the floor's checkpoint far ahead: the floor's own FOR UPDATE does not run and refuse first)
UPDATE inbox.outbox_scan_floor
SET checkpoint_xid = (pg_current_xact_id()::text::bigint + 1000000)::text::xid8;
-- So is a settlement.
CREATE FUNCTION done_sqlstate(edition text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN done_by(edition, ids_of(2));
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
BEGIN READ ONLY;
SELECT take_sqlstate('library') AS library, take_sqlstate('sql') AS sql_edition;
SELECT done_sqlstate('library') AS library, done_sqlstate('sql') AS sql_edition;
ROLLBACK;
-- A publication of the table's updates and deletes needs the table's replica identity: without
-- one, both refuse a take and a settlement (55000), as the statements' plans check.
SET client_min_messages = error;  -- (a publication warns when wal_level is not logical)
CREATE PUBLICATION outbox_changes FOR TABLE inbox.outbox_messages;
RESET client_min_messages;
ALTER TABLE inbox.outbox_messages REPLICA IDENTITY NOTHING;
SELECT take_sqlstate('library') AS library, take_sqlstate('sql') AS sql_edition;
SELECT done_sqlstate('library') AS library, done_sqlstate('sql') AS sql_edition;
ALTER TABLE inbox.outbox_messages REPLICA IDENTITY DEFAULT;
DROP PUBLICATION outbox_changes;

-- The argument checks are one body for both (inbox.relay_take_floor).
SELECT * FROM inbox.relay_take(NULL);
SELECT * FROM inbox.relay_take('');
SELECT * FROM inbox.relay_take('r1', 0);
SELECT * FROM inbox.relay_take('r1', 10, '0 seconds');
-- relay_done's, in both.
SELECT inbox.relay_done(NULL);
SELECT inbox.relay_done_messages(NULL);

-- Settlements of ids scattered over an outbox of 2,000 messages, which the library finds by
-- walking the primary key (descending again to an id far ahead): ids 97 messages apart, runs of
-- neighbours, unknown ids before, between and after the others, a repeated one, ids settled
-- before, and ids whose index holds entries of versions that are no more (updates that left
-- their page). The same counts, the same messages left and the same records in both.
CREATE FUNCTION walk_scenario(edition text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
    settled uuid[] := '{}';
    ids uuid[];
    pages float8[];
BEGIN
    DELETE FROM inbox.outbox_messages;
    DELETE FROM inbox.outbox_delivered;
    PERFORM inbox.send('walk', jsonb_build_object('n', n)) FROM generate_series(1, 2000) n;
    -- Updated until their page is full: their later versions are on other pages, each with an
    -- entry of its own.
    -- (Each compared with its own first page, which its versions fill and none can leave.)
    pages := (SELECT array_agg((m.ctid::text::point)[0] ORDER BY m.ordinal)
              FROM inbox.outbox_messages m WHERE m.payload ->> 'n' IN ('300', '1200'));
    FOR i IN 1..150 LOOP
        UPDATE inbox.outbox_messages SET attempts = attempts + 1
        WHERE payload ->> 'n' IN ('300', '1200');
    END LOOP;
    RETURN QUERY
    SELECT format('messages 300 and 1200 moved to other pages: %s',
                  bool_and((m.ctid::text::point)[0] <> pages[o]))
    FROM (SELECT m.ctid, row_number() OVER (ORDER BY m.ordinal) AS o
          FROM inbox.outbox_messages m WHERE m.payload ->> 'n' IN ('300', '1200')) m;
    ids := (SELECT array_agg(m.id) FROM inbox.outbox_messages m
            WHERE (m.payload ->> 'n')::int % 97 = 1);
    settled := settled || ids;
    RETURN NEXT done_by(edition, ids || ids[3] ||
                        ARRAY['00000000-0000-0000-0000-000000000000', gen_random_uuid(),
                              'ffffffff-ffff-ffff-ffff-ffffffffffff', NULL]::uuid[]);
    ids := (SELECT array_agg(m.id) FROM inbox.outbox_messages m
            WHERE (m.payload ->> 'n')::int BETWEEN 500 AND 540
               OR m.payload ->> 'n' IN ('300', '1200', '1999', '2000'));
    settled := settled || ids;
    RETURN NEXT done_by(edition, ids || settled[1:5] || gen_random_uuid());
    RETURN NEXT done_by(edition, settled);
    -- The rest in one settlement: more records than are written at a time (1,000).
    ids := (SELECT array_agg(m.id) FROM inbox.outbox_messages m);
    settled := settled || ids;
    RETURN NEXT done_by(edition, ids);
    RETURN QUERY
    SELECT format('left: %s messages, numbers summing to %s, %s of them settled before',
                  count(*), sum((m.payload ->> 'n')::int), count(*) FILTER (WHERE m.id = ANY (settled)))
    FROM inbox.outbox_messages m;
    RETURN QUERY
    SELECT format('records: %s, of settled messages: %s, each once: %s, attempts summing to %s, '
                  'destinations %s, created before delivered: %s',
                  count(*), count(*) FILTER (WHERE d.id = ANY (settled)),
                  count(DISTINCT d.id) = count(*), sum(d.attempts),
                  string_agg(DISTINCT d.destination, ' '), bool_and(d.created_at <= d.delivered_at))
    FROM inbox.outbox_delivered d;
END $$;
SELECT l.line, l.line = s.line AS same_in_the_sql_edition
FROM (SELECT row_number() OVER () AS step, line FROM walk_scenario('library') line) l
     FULL JOIN (SELECT row_number() OVER () AS step, line FROM walk_scenario('sql') line) s
     USING (step)
ORDER BY step;

-- A take leases no message that its own transaction wrote: sent there (not committed, it may yet
-- roll back; in a subtransaction too), or failed there (its change not yet everyone's). It takes
-- the committed ones beside them; after the rollback they are as they were, unleased.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
SELECT count(inbox.send('own', jsonb_build_object('n', g))) AS committed
FROM generate_series(1, 2) g;
CREATE FUNCTION own_writes(edition text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM inbox.send('own', '{"n": 3}');
    BEGIN
        PERFORM inbox.send('own', '{"n": 4}');  -- in a subtransaction, committed into this one
    EXCEPTION WHEN raise_exception THEN
        RAISE;
    END;
    RETURN NEXT take_by(edition, 'own-relay', 10);
    RETURN NEXT format('failed %s', inbox.relay_failed(ids_of(1), 'refused', '0 seconds'));
    RETURN NEXT take_by(edition, 'own-relay', 10);
END $$;
BEGIN;
SELECT * FROM own_writes('library');
ROLLBACK;
BEGIN;
SELECT * FROM own_writes('sql');
ROLLBACK;
SELECT m.payload ->> 'n' AS n, m.attempts, m.leased_by FROM inbox.outbox_messages m ORDER BY 1;
-- A relay that settles its last batch and takes the next in one transaction takes as it would in
-- two: the messages it did not write.
BEGIN;
SELECT take_by('library', 'own-relay', 1);
SELECT format('done %s', inbox.relay_done(ids_of(1)));
SELECT take_by('library', 'own-relay', 1);
COMMIT;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
UPDATE inbox.outbox_scan_floor SET floor = 0, checkpoint_ordinal = 0, checkpoint_xid = '0';
DROP PROCEDURE take_scenario(text, text), say(text, text);
DROP FUNCTION take_by(text, text, integer, text[]), ids_of(integer[]), done_by(text, uuid[]),
    expire_leases(), take_own_locked(text), take_sqlstate(text), done_sqlstate(text),
    walk_scenario(text), own_writes(text), lines_of(text);
DROP TABLE scenario_lines;
