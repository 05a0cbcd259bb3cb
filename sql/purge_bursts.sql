-- The purge of bursts: one second (or a few seconds of one 256-second bucket) holding more
-- markers than a batch, as a backlog drained with claim_batch leaves them. Batches of 7 cross the
-- bursts' boundaries with few rows; three consumers with different retentions (inbox.retention
-- 1 hour here): "burst-keep" keeps its markers 3 hours, "burst-short" 10 minutes,
-- "burst-default" follows inbox.retention.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql
DELETE FROM inbox.messages;
SELECT inbox.configure_consumer('burst-keep', '3 hours'),
       inbox.configure_consumer('burst-short', '10 min');

-- Per consumer: 40 markers in one second 2 hours ago, 30 in one second 30 minutes ago, 3 seconds
-- of 12 markers each 2 hours and 1 to 3 seconds ago (one bucket or two, larger than a batch
-- either way), 20 in the second before the default cutoff's and 20 in the cutoff's own second
-- (the cutoff's bucket is deleted by its rows up to the second before it), and 40 markers 2 hours
-- and 10 seconds ago whose ids lie between those of 120 markers 20 minutes ago (a bucket's rows
-- interleaved with many others of the consumer). Every fifth marker has a payload fingerprint
-- beside it.
CREATE FUNCTION pg_temp.load_bursts() RETURNS void LANGUAGE sql AS $$
    INSERT INTO inbox.messages
    SELECT c, c || '/' || label || '/' || i, at
    FROM unnest(ARRAY['burst-keep', 'burst-short', 'burst-default']) c,
         (VALUES ('2h', date_trunc('second', now()) - interval '2 hours', 40),
                 ('30min', date_trunc('second', now()) - interval '30 min', 30),
                 ('2h+1s', date_trunc('second', now()) - interval '2 hours 1 s', 12),
                 ('2h+2s', date_trunc('second', now()) - interval '2 hours 2 s', 12),
                 ('2h+3s', date_trunc('second', now()) - interval '2 hours 3 s', 12),
                 ('cutoff-1s', date_trunc('second', now() - interval '1 hour') - interval '1 s', 20),
                 ('cutoff', date_trunc('second', now() - interval '1 hour'), 20)) AS burst(label, at, n),
         generate_series(1, n) i;
    INSERT INTO inbox.messages
    SELECT c, c || '/mixed/' || i || '/' || age, date_trunc('second', now()) - at::interval
    FROM unnest(ARRAY['burst-keep', 'burst-short', 'burst-default']) c,
         (VALUES ('a', '20 min'), ('b', '2 hours 10 s'), ('c', '20 min'), ('d', '20 min')) AS a(age, at),
         generate_series(1, 40) i;
    INSERT INTO inbox.marker_details (time_bucket, consumer_id, time_offset, message_key, fingerprint)
    SELECT m.time_bucket, m.consumer_id, m.time_offset, m.message_key, 42
    FROM inbox.markers m JOIN inbox.consumer_registry r ON r.id = m.consumer_id
    WHERE r.name LIKE 'burst-%' AND pg_catalog.get_byte(m.message_key, pg_catalog.length(m.message_key) - 1) % 5 = 0;
$$;

-- The markers that must stay: those whose second is not before their consumer's cutoff, which
-- now() - retention is (the purge's cutoffs are those of its transaction's start).
CREATE FUNCTION pg_temp.kept_markers() RETURNS TABLE (consumer text, message_id text)
LANGUAGE sql AS $$
    SELECT m.consumer, m.message_id FROM inbox.messages m JOIN inbox.consumers c USING (consumer)
    WHERE m.consumer LIKE 'burst-%'
      AND m.processed_at >= date_trunc('second', now() - coalesce(c.retention, interval '1 hour'))
$$;

-- One transaction: the purge deletes exactly the expired markers, each consumer's own, with
-- their details; every kept marker is still a duplicate, and an expired message may be claimed
-- again.
BEGIN;
SET LOCAL inbox.retention = '1h';
SET LOCAL inbox.purge_batch_size = 7;
SELECT pg_temp.load_bursts();
CREATE TEMP TABLE expected_kept AS SELECT * FROM pg_temp.kept_markers();
SELECT count(*) AS markers, (SELECT count(*) FROM expected_kept) AS to_keep
FROM inbox.messages WHERE consumer LIKE 'burst-%';
CALL inbox.purge();
SELECT consumer, count(*) AS kept, string_agg(DISTINCT split_part(message_id, '/', 2), ', ') AS ages_kept
FROM inbox.messages WHERE consumer LIKE 'burst-%' GROUP BY consumer ORDER BY consumer;
SELECT (SELECT count(*) FROM (SELECT consumer, message_id FROM inbox.messages
                              WHERE consumer LIKE 'burst-%' EXCEPT SELECT * FROM expected_kept) x)
           AS kept_but_expired,
       (SELECT count(*) FROM (SELECT * FROM expected_kept EXCEPT
                              SELECT consumer, message_id FROM inbox.messages) x) AS lost;
SELECT count(*) AS details_without_marker
FROM inbox.marker_details d
WHERE NOT EXISTS (SELECT FROM inbox.markers m
                  WHERE m.consumer_id = d.consumer_id AND m.message_key = d.message_key);
SELECT count(*) FILTER (WHERE inbox.claim(consumer, message_id)) AS claimed_again,
       count(*) AS kept
FROM expected_kept;
SELECT inbox.claim('burst-short', 'burst-short/2h/1') AS expired_claimed_again;
ROLLBACK;

-- Committing after each batch (CALL outside a transaction block), the markers far from the
-- cutoffs: the same markers go.
SET inbox.retention = '1h';
SET inbox.purge_batch_size = 7;
SELECT pg_temp.load_bursts();
DELETE FROM inbox.messages WHERE message_id LIKE '%/cutoff%';
CREATE TEMP TABLE expected_kept AS SELECT * FROM pg_temp.kept_markers();
CALL inbox.purge();
SELECT (SELECT count(*) FROM (SELECT consumer, message_id FROM inbox.messages
                              WHERE consumer LIKE 'burst-%' EXCEPT SELECT * FROM expected_kept) x)
           AS kept_but_expired,
       (SELECT count(*) FROM (SELECT * FROM expected_kept EXCEPT
                              SELECT consumer, message_id FROM inbox.messages) x) AS lost,
       (SELECT count(*) FROM expected_kept) AS kept;
DROP TABLE expected_kept;
DELETE FROM inbox.messages;
-- The rows of a burst larger than work_mem wait in a temporary file across the commits.
SET work_mem = '64kB';
SET inbox.purge_batch_size = 500;
INSERT INTO inbox.messages
SELECT 'burst-default', 'spilled/' || i, date_trunc('second', now()) - interval '2 hours'
FROM generate_series(1, 2000) i;
CALL inbox.purge();
SELECT count(*) AS left_behind FROM inbox.messages;
RESET work_mem;

-- The work is linear in the markers deleted: a burst of 700 markers in one second, purged in 100
-- batches of 7 in one transaction, reads each marker of the burst through an index once (to
-- find its row; the batches delete by ctid, which no index counts), and the retention index
-- where the burst's bucket ends. A purge that looked for each batch's markers from the burst's
-- start would walk the ones earlier batches deleted, which stay in the indexes (no scan may mark
-- them dead while the transaction that deleted them is open): some 100 x 700 / 2 tuples.
INSERT INTO inbox.messages
SELECT 'burst-default', 'one-second/' || i, date_trunc('second', now()) - interval '2 hours'
FROM generate_series(1, 700) i;
-- The table as autovacuum keeps it (of markers hours old): without statistics, a table this
-- small looks to the planner as if it held a handful of markers, and any plan as good as
-- another; the entries of the markers purged above are gone.
VACUUM ANALYZE inbox.markers;
-- (The statistics are flushed as the statement that forces it ends.)
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
CREATE TEMP TABLE reads_before AS
SELECT t.seq_tup_read + t.idx_tup_fetch AS table_reads, i.idx_tup_read AS retention_index_reads
FROM pg_stat_user_tables t, pg_stat_user_indexes i
WHERE t.relid = 'inbox.markers'::regclass AND i.indexrelid = 'inbox.markers_retention'::regclass;
BEGIN;
SET LOCAL inbox.retention = '1h';
SET LOCAL inbox.purge_batch_size = 7;
CALL inbox.purge();
COMMIT;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT t.seq_tup_read + t.idx_tup_fetch - b.table_reads <= 2 * 700 AS table_reads_linear,
       i.idx_tup_read - b.retention_index_reads <= 2 * 700 AS retention_index_reads_linear
FROM pg_stat_user_tables t, pg_stat_user_indexes i, reads_before b
WHERE t.relid = 'inbox.markers'::regclass AND i.indexrelid = 'inbox.markers_retention'::regclass;
SELECT count(*) AS left_behind FROM inbox.messages;
DROP TABLE reads_before;

DELETE FROM inbox.messages;
SELECT inbox.configure_consumer('burst-keep'), inbox.configure_consumer('burst-short');
RESET ALL;
