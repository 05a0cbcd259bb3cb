-- The library's inbox.relay_take (its leases made in C, src/outbox/direct_take.cpp) against
-- inbox.relay_take_messages, the statement the SQL edition (1.4) serves it with, and against the
-- library's take of a table that only the statement serves (a trigger on it): the same messages
-- taken in the same order, the same attempts, the same messages made dead, the same rows left,
-- through one scenario of keys, destinations, settlements, expired leases and the dead-on-take
-- rule. A change to either that the other does not follow fails here. (Concurrency, skipped
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
-- message's row.
CREATE FUNCTION take_scenario(edition text) RETURNS SETOF text
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
    -- One message of a key at a time, in order; the limit counts what is taken.
    RETURN NEXT take_by(edition, 'r1', 2);
    RETURN NEXT take_by(edition, 'r2', 10, '{b}');
    RETURN NEXT take_by(edition, 'r3', 1, '{c, NULL}');
    RETURN NEXT take_by(edition, 'r4', 10);
    RETURN NEXT take_by(edition, 'r4', 10);
    -- Settled: the key's next goes out; failed, due again at once: taken again, second attempt.
    RETURN NEXT format('done %s', inbox.relay_done(ids_of(1, 4)));
    RETURN NEXT format('failed %s', inbox.relay_failed(ids_of(3), 'refused', '0 seconds'));
    RETURN NEXT take_by(edition, 'r1', 10);
    -- Expired leases go to the next relay, with one more attempt; at the limit, dead instead
    -- (and their key's next message waits for the next take).
    PERFORM expire_leases();
    RETURN NEXT take_by(edition, 'r5', 3);
    RETURN NEXT take_by(edition, 'r5', 10);
    PERFORM set_config('inbox.outbox_max_attempts', '2', true);
    PERFORM expire_leases();
    RETURN NEXT take_by(edition, 'r6', 10);
    RETURN NEXT take_by(edition, 'r6', 10);
    PERFORM set_config('inbox.outbox_max_attempts', '10', true);
    RETURN NEXT format('released %s', inbox.relay_release(ids_of(2, 3, 5, 7)));
    RETURN NEXT take_by(edition, 'r7', 10);
    RETURN QUERY
    SELECT format('%s: %s attempts %s, %s%s', m.payload ->> 'n',
                  CASE WHEN m.dead_at IS NOT NULL THEN 'dead'
                       WHEN m.leased_by IS NOT NULL THEN 'leased by ' || m.leased_by
                       ELSE 'pending' END,
                  m.attempts, coalesce(m.last_error, 'no error'),
                  CASE WHEN m.leased_by IS NOT NULL AND m.not_before <= now()
                       THEN ' (lease over)' ELSE '' END)
    FROM inbox.outbox_messages m ORDER BY m.ordinal;
    RETURN NEXT format('delivered %s', (SELECT count(*) FROM inbox.outbox_delivered));
END $$;

CREATE TEMPORARY TABLE library AS
SELECT row_number() OVER () AS step, line FROM take_scenario('library') line;
CREATE TEMPORARY TABLE sql_edition AS
SELECT row_number() OVER () AS step, line FROM take_scenario('sql') line;
-- A trigger on the table: the library's take leaves it to the statement.
-- The trigger counts the leases it saw: it runs only if the statement made them.
CREATE TABLE outbox_leases_seen (leased_by text);
CREATE FUNCTION outbox_touched() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.leased_by IS DISTINCT FROM OLD.leased_by AND NEW.leased_by IS NOT NULL THEN
        INSERT INTO public.outbox_leases_seen VALUES (NEW.leased_by);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER outbox_touched BEFORE UPDATE ON inbox.outbox_messages
    FOR EACH ROW EXECUTE FUNCTION outbox_touched();
CREATE TEMPORARY TABLE library_with_trigger AS
SELECT row_number() OVER () AS step, line FROM take_scenario('library') line;
DROP TRIGGER outbox_touched ON inbox.outbox_messages;
DROP FUNCTION outbox_touched();
SELECT count(*) AS leases_the_trigger_saw FROM outbox_leases_seen;
DROP TABLE outbox_leases_seen;

SELECT l.line, l.line = s.line AS same_in_the_sql_edition,
       l.line = t.line AS same_with_a_trigger
FROM library l FULL JOIN sql_edition s USING (step) FULL JOIN library_with_trigger t USING (step)
ORDER BY step;

-- A message this transaction locked before its take (SELECT ... FOR UPDATE) is taken by both.
CREATE FUNCTION take_own_locked(edition text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM inbox.outbox_messages;
    PERFORM inbox.send('own', '{"n": 1}');
    PERFORM FROM inbox.outbox_messages FOR UPDATE;
    RETURN take_by(edition, 'r1', 10);
END $$;
SELECT take_own_locked('library') AS library, take_own_locked('sql') AS sql_edition;

-- A lease is a write: both refuse it in a read-only transaction (25006), as on a standby.
CREATE FUNCTION take_read_only(edition text) RETURNS text
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
BEGIN READ ONLY;
SELECT take_read_only('library') AS library, take_read_only('sql') AS sql_edition;
ROLLBACK;

-- The argument checks are one body for both (inbox.relay_take_floor).
SELECT * FROM inbox.relay_take(NULL);
SELECT * FROM inbox.relay_take('');
SELECT * FROM inbox.relay_take('r1', 0);
SELECT * FROM inbox.relay_take('r1', 10, '0 seconds');

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
UPDATE inbox.outbox_scan_floor SET floor = 0, checkpoint_ordinal = 0, checkpoint_xid = '0';
DROP FUNCTION take_scenario(text), take_by(text, text, integer, text[]), ids_of(integer[]),
    expire_leases(), take_own_locked(text), take_read_only(text);
