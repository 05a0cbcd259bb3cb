-- A relay's calls cost what their batch holds, not what the outbox holds: a backlog (a broker
-- down for an hour) must not make each relay_take, relay_done, relay_failed or relay_release read
-- every pending message, whatever statistics the planner has. The statistics here are the usual
-- ones, taken while few messages waited; then a backlog arrives. The table starts empty of
-- dead rows too (those of earlier tests would take the room that HOT updates use).
TRUNCATE inbox.outbox_messages, inbox.outbox_delivered;
SELECT count(inbox.send('orders', '{}')) FROM generate_series(1, 3000);
SELECT inbox.relay_done(ARRAY(SELECT id FROM inbox.outbox_messages
                              WHERE ordinal NOT IN (SELECT max(ordinal)
                                                    FROM inbox.outbox_messages))) AS delivered;
ANALYZE inbox.outbox_messages;
SELECT count(inbox.send('orders', '{}', CASE WHEN g % 10 = 0 THEN 'k-' || g % 50 END))
FROM generate_series(1, 2000) g;

-- What one call read and wrote: the scans of the table (sequential), of the undelivered index
-- and of the primary key, and the HOT updates; counted by the backend as the call runs.
CREATE FUNCTION relay_call(call text, OUT result bigint, OUT table_scans bigint,
                           OUT undelivered_index_scans bigint, OUT primary_key_scans bigint,
                           OUT hot_updates bigint)
LANGUAGE plpgsql AS $$
DECLARE
    before bigint[];
    after bigint[];
BEGIN
    before := ARRAY[pg_stat_get_xact_numscans('inbox.outbox_messages'::regclass),
                    pg_stat_get_xact_numscans('inbox.outbox_messages_undelivered'::regclass),
                    pg_stat_get_xact_numscans('inbox.outbox_messages_pkey'::regclass),
                    pg_stat_get_xact_tuples_hot_updated('inbox.outbox_messages'::regclass)];
    EXECUTE call INTO result;
    after := ARRAY[pg_stat_get_xact_numscans('inbox.outbox_messages'::regclass),
                   pg_stat_get_xact_numscans('inbox.outbox_messages_undelivered'::regclass),
                   pg_stat_get_xact_numscans('inbox.outbox_messages_pkey'::regclass),
                   pg_stat_get_xact_tuples_hot_updated('inbox.outbox_messages'::regclass)];
    table_scans := after[1] - before[1];
    undelivered_index_scans := after[2] - before[2];
    primary_key_scans := after[3] - before[3];
    hot_updates := after[4] - before[4];
END $$;
CREATE TEMP TABLE taken (id uuid);

-- The take reads the undelivered messages in send order from its floor up to its batch (two
-- scans of the undelivered index: the one that moves the floor, the one that takes) and leases
-- them at their row addresses, neither a scan of the table nor of the primary key; the lease
-- changes no indexed column, and the room each page keeps for it makes it a HOT update.
SELECT result AS taken, table_scans, undelivered_index_scans, primary_key_scans, hot_updates
FROM relay_call($$WITH t AS (INSERT INTO taken SELECT id FROM inbox.relay_take('relay-1', 300)
                             RETURNING 1)
                  SELECT count(*) FROM t$$);

-- Done, failed and released find their messages by primary key only.
SELECT result AS done, table_scans, undelivered_index_scans,
       primary_key_scans > 0 AS by_primary_key
FROM relay_call($$SELECT inbox.relay_done(ARRAY(SELECT id FROM taken LIMIT 100))$$);
SET inbox.outbox_max_attempts = 1;
SELECT result AS failed, table_scans, undelivered_index_scans,
       primary_key_scans > 0 AS by_primary_key
FROM relay_call($$SELECT inbox.relay_failed(ARRAY(SELECT id FROM taken), 'broker down')$$);
RESET inbox.outbox_max_attempts;
SELECT result AS released, table_scans, undelivered_index_scans,
       primary_key_scans > 0 AS by_primary_key
FROM relay_call($$SELECT inbox.relay_release(ARRAY(SELECT id FROM taken))$$);

DROP TABLE taken;
DROP FUNCTION relay_call(text);
DELETE FROM inbox.outbox_messages;
DELETE FROM inbox.outbox_delivered;
