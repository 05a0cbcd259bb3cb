-- The cause of an outgoing message (docs/outbox.md): the latest claim the sending transaction
-- holds, (consumer, message id), or NULLs.
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
CREATE FUNCTION sent_causes() RETURNS TABLE (payload jsonb, cause_consumer text,
                                             cause_message_id text)
LANGUAGE sql AS $$
    SELECT m.payload, m.cause_consumer, m.cause_message_id
    FROM inbox.outbox_messages m ORDER BY m.ordinal
$$;
CREATE FUNCTION send_payload(payload jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF payload = '"fail"' THEN
        PERFORM inbox.send('d', payload);
        RAISE EXCEPTION 'handler failed';
    END IF;
    PERFORM inbox.send('d', payload);
END $$;

-- Without a claim: no cause.
SELECT inbox.send('d', '"no claim"') IS NOT NULL AS sent;

-- After a claim, the claimed message; a duplicate claim is held by no one in this transaction.
BEGIN;
SELECT inbox.claim('cause', 'm-1') AS claimed;
SELECT inbox.send('d', '"after claim"') IS NOT NULL AS sent;
COMMIT;
BEGIN;
SELECT inbox.claim('cause', 'm-1') AS claimed;
SELECT inbox.send('d', '"after a duplicate"') IS NOT NULL AS sent;
COMMIT;

-- A claim of an earlier transaction is never a cause: each statement here is a transaction.
SELECT inbox.claim('cause', 'm-2') AS claimed;
SELECT inbox.send('d', '"next transaction"') IS NOT NULL AS sent;

-- A handler's send, under apply, has the applied message as cause.
SELECT inbox.apply('cause', 'm-3', 'send_payload(jsonb)', '"from apply"') AS applied;

-- receive: a processed message is the cause; a duplicate is none.
BEGIN;
SELECT outcome FROM inbox.receive('cause', 'm-4');
SELECT inbox.send('d', '"after receive"') IS NOT NULL AS sent;
COMMIT;
BEGIN;
SELECT outcome FROM inbox.receive('cause', 'm-4');
SELECT inbox.send('d', '"after a duplicate receive"') IS NOT NULL AS sent;
COMMIT;

-- claim_batch: the last id it claimed now (m-1, given last, is a duplicate).
BEGIN;
SELECT * FROM inbox.claim_batch('cause', ARRAY['m-5', 'm-6', 'm-1']);
SELECT inbox.send('d', '"after claim_batch"') IS NOT NULL AS sent;
COMMIT;

-- apply_batch: each handler's send has its own message; a failed handler's send goes with its
-- subtransaction, and so does its claim: after the batch, the transaction has no cause.
BEGIN;
SELECT message_id, outcome FROM inbox.apply_batch('cause', 'send_payload(jsonb)',
    '[{"id": "m-7", "payload": "batch m-7"}, {"id": "m-8", "payload": "batch m-8"},
      {"id": "m-9", "payload": "fail"}]');
SELECT inbox.send('d', '"after apply_batch"') IS NOT NULL AS sent;
COMMIT;

-- A claim rolled back to a savepoint is no cause any more (its marker is gone), nor is the
-- earlier claim it replaced; a claim in a released savepoint stays the cause.
BEGIN;
SELECT inbox.claim('cause', 'm-10') AS claimed;
SAVEPOINT s;
SELECT inbox.claim('cause', 'm-11') AS claimed;
ROLLBACK TO SAVEPOINT s;
SELECT inbox.send('d', '"after rollback to savepoint"') IS NOT NULL AS sent;
SAVEPOINT t;
SELECT inbox.claim('cause', 'm-12') AS claimed;
RELEASE SAVEPOINT t;
SELECT inbox.send('d', '"after release"') IS NOT NULL AS sent;
COMMIT;

SELECT * FROM sent_causes();

-- inbox.stats shows the relay's lag per cause: the undelivered messages, not dead, that a claim
-- of the consumer caused, and the age of the oldest; those sent outside any claim are the
-- NULL-consumer row's. A delivered message and a dead one are not pending; a leased one is.
SET inbox.outbox_max_attempts = 1;
SELECT inbox.relay_done(array_agg(id)) AS delivered FROM inbox.outbox
WHERE cause_message_id IN ('m-1', 'm-3');
SELECT inbox.relay_failed(array_agg(id), 'refused') AS dead
FROM inbox.relay_take('relay-1', 100) WHERE payload = '"batch m-7"';
RESET inbox.outbox_max_attempts;
-- (a message whose consumer is registered nowhere, as one restored without the registry)
INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, id, destination, payload,
                                   cause_consumer, cause_message_id)
VALUES (nextval('inbox.outbox_ordinal'), now() - interval '1 hour', now(), gen_random_uuid(), 'd',
        '"unregistered"', 'unregistered', 'u-1');
CREATE ROLE regress_outbox_monitor;
SELECT inbox.grant_access('regress_outbox_monitor', 'monitor');
SET ROLE regress_outbox_monitor;
SELECT consumer, outbox_pending, outbox_oldest_pending_age > interval '0' AS has_age,
       outbox_oldest_pending_age >= interval '1 hour' AS hour_old
FROM inbox.stats WHERE outbox_pending > 0 OR consumer IN ('cause', 'unregistered')
ORDER BY consumer NULLS FIRST;
SELECT sum(outbox_pending) AS in_stats, (SELECT pending FROM inbox.outbox_stats) AS in_outbox_stats
FROM inbox.stats;
RESET ROLE;
-- Delivered, the messages sent outside a claim leave the NULL-consumer row.
SELECT inbox.relay_done(array_agg(id)) > 0 AS delivered FROM inbox.outbox
WHERE cause_consumer IS NULL;
SELECT coalesce(sum(outbox_pending), 0) AS without_cause FROM inbox.stats WHERE consumer IS NULL;
-- The columns come last, after those of 1.2 and attempts_evicted.
SELECT attname FROM pg_attribute WHERE attrelid = 'inbox.stats'::regclass AND attnum > 11
ORDER BY attnum;

-- The message id of a cause whose consumer has an owner is its service's data: shown to the roles
-- that may act for the consumer and to the monitoring roles (pg_read_all_stats), NULL to other
-- readers, as in inbox.attempts; a reader that may not read inbox.consumers sees none.
CREATE ROLE regress_cause_owner;
CREATE ROLE regress_outbox_reader;
GRANT USAGE ON SCHEMA inbox TO regress_outbox_reader;
GRANT SELECT ON inbox.outbox TO regress_outbox_reader;
SELECT inbox.configure_consumer('cause', owner => 'regress_cause_owner');
SELECT owner FROM inbox.consumers WHERE consumer = 'cause';
CREATE FUNCTION causes_shown() RETURNS TABLE (consumer text, messages bigint, ids_shown bigint)
LANGUAGE sql AS $$
    SELECT cause_consumer, count(*), count(cause_message_id) FROM inbox.outbox
    WHERE cause_consumer IS NOT NULL GROUP BY 1 ORDER BY 1
$$;
SET ROLE regress_outbox_monitor;
SELECT * FROM causes_shown();
RESET ROLE;
GRANT regress_cause_owner TO regress_outbox_monitor;
SET ROLE regress_outbox_monitor;
SELECT * FROM causes_shown();
RESET ROLE;
REVOKE regress_cause_owner FROM regress_outbox_monitor;
GRANT pg_read_all_stats TO regress_outbox_monitor;
SET ROLE regress_outbox_monitor;
SELECT * FROM causes_shown();
RESET ROLE;
SET ROLE regress_outbox_reader;
SELECT * FROM causes_shown();
RESET ROLE;
SELECT * FROM causes_shown();
SELECT inbox.reset_consumer('cause', 'owner');
DROP FUNCTION causes_shown();
DROP OWNED BY regress_outbox_monitor, regress_outbox_reader;
DROP ROLE regress_outbox_monitor, regress_outbox_reader, regress_cause_owner;

-- Only the extension's owner may ask (inbox.send does, as its owner).
SELECT has_function_privilege('public', 'inbox.claimed_cause()', 'EXECUTE') AS public_may_ask;
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
DROP FUNCTION sent_causes(), send_payload(jsonb);
