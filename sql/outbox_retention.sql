-- The purge deletes delivered outgoing messages once inbox.outbox_retention has passed since
-- their delivery; undelivered ones (pending, leased, dead) never, whatever their age.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
SHOW inbox.outbox_retention;

-- Messages sent long ago: a UUIDv7 of their send time, as inbox.send makes one.
CREATE FUNCTION sent_at(sent timestamptz) RETURNS uuid LANGUAGE sql AS $$
    SELECT encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                  PLACING substring(int8send(floor(extract(epoch FROM sent) * 1000)::bigint)
                                    FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid
$$;
-- The label is the message's key: a delivered message keeps no payload.
CREATE PROCEDURE old_message(label text, sent interval, delivered interval,
                             leased boolean DEFAULT false, dead boolean DEFAULT false)
LANGUAGE sql AS $$
    INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, dead_at, leased_by, id,
                                       destination, key, payload)
    SELECT nextval('inbox.outbox_ordinal'), now() - sent,
           CASE WHEN leased THEN now() + interval '1 hour' ELSE now() - sent END,
           CASE WHEN dead THEN now() - sent END, CASE WHEN leased THEN 'relay-1' END,
           sent_at(now() - sent), 'd', label, to_jsonb(label)
    WHERE delivered IS NULL;
    INSERT INTO inbox.outbox_delivered (created_at, delivered_at, id, attempts, destination, key)
    SELECT now() - sent, now() - delivered, sent_at(now() - sent), 1, 'd', label
    WHERE delivered IS NOT NULL;
$$;
-- Every message, by its label or payload, in send order.
CREATE FUNCTION outbox_now() RETURNS TABLE (message text, state text) LANGUAGE sql AS $$
    SELECT coalesce(o.key, m.payload #>> '{}'), o.state
    FROM inbox.outbox o LEFT JOIN inbox.outbox_messages m USING (id)
    ORDER BY o.created_at, 1
$$;
CALL old_message('delivered 8 days ago', '9 days', '8 days');
CALL old_message('delivered 8 days ago, too', '8 days 1 hour', '8 days');
CALL old_message('delivered 2 hours ago', '9 days', '2 hours');
CALL old_message('pending for 30 days', '30 days', NULL);
CALL old_message('leased, sent 30 days ago', '30 days', NULL, leased => true);
CALL old_message('dead, sent 30 days ago', '30 days', NULL, dead => true);
SELECT inbox.send('d', '"sent now"', 'sent now') IS NOT NULL AS sent;
SELECT inbox.relay_done(array_agg(id)) AS delivered_now FROM inbox.outbox
WHERE state = 'pending' AND created_at > now() - interval '1 minute';
SELECT state, count(*) FROM inbox.outbox GROUP BY 1 ORDER BY 1;

-- The default, 7 days: the messages delivered 8 days ago go, the rest stay. The purge's count
-- is its markers' (none expired here).
CALL inbox.purge();
SELECT * FROM outbox_now();

-- One hour, in batches of one, committed between batches: the message delivered 2 hours ago
-- goes too; undelivered messages stay, whatever their age.
SET inbox.outbox_retention = '1h';
SET inbox.purge_batch_size = 1;
CALL old_message('another, delivered 3 hours ago', '9 days', '3 hours');
CALL inbox.purge();
SELECT * FROM outbox_now();
RESET inbox.purge_batch_size;
RESET inbox.outbox_retention;

-- The value is a duration with its unit, as inbox.retention; only superusers set it.
SET inbox.outbox_retention = '7';
SET inbox.outbox_retention = '500ms';
CREATE ROLE regress_outbox_retention;
SET ROLE regress_outbox_retention;
SET inbox.outbox_retention = '1s';
RESET ROLE;
DROP ROLE regress_outbox_retention;

-- 0 keeps none: relay_done deletes what it marks delivered (again, it settles nothing), a failure
-- and the undelivered are as with any retention, and the purge deletes what a longer retention
-- kept. Zero takes any unit or none; under a second is still refused.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
CALL old_message('delivered a second ago, kept by 7d', '1 hour', '1 second');
SET inbox.outbox_retention = '0';
SHOW inbox.outbox_retention;
SELECT count(inbox.send('d', to_jsonb(n))) AS sent FROM generate_series(1, 3) n;
CREATE TEMP TABLE taken AS SELECT id, payload FROM inbox.relay_take('relay-0', 10);
SELECT payload FROM taken ORDER BY payload;
SELECT inbox.relay_done(array_agg(id)) AS delivered FROM taken WHERE payload <> '3';
SELECT inbox.relay_done(array_agg(id)) AS delivered_again FROM taken WHERE payload <> '3';
SELECT inbox.relay_failed(array_agg(id), 'refused') AS failed FROM taken WHERE payload = '3';
SELECT * FROM outbox_now();
CALL inbox.purge();
SELECT * FROM outbox_now();
SET inbox.outbox_retention = ' 00 d ';
SELECT inbox.relay_done(array_agg(id)) AS delivered FROM taken WHERE payload = '3';
SELECT count(*) AS kept FROM inbox.outbox_messages;
SET inbox.outbox_retention = '0s';
SET inbox.outbox_retention = '0.5s';
SET inbox.outbox_retention = '0x';
RESET inbox.outbox_retention;

DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
DROP PROCEDURE old_message(text, interval, interval, boolean, boolean);
DROP FUNCTION sent_at(timestamptz), outbox_now();
