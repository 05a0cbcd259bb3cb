-- inbox.stats: exact claim counters (the temporary instance preloads the library) and the
-- markers retained. Consumers of this file start with "st-"; counters of this database start
-- from zero.
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/test/regress/helpers.sql

-- Counted before the reset: one applied, one duplicate.
SELECT inbox.claim('st-before', 'b-1') AS first, inbox.claim('st-before', 'b-1') AS duplicate;
SELECT clock_timestamp() AS before_reset \gset
SELECT inbox.stats_reset();
CREATE VIEW stats_now AS
SELECT consumer, applied, duplicates, round(duplicate_rate::numeric, 3) AS duplicate_rate,
       retained, oldest_processed_at IS NOT NULL AS has_oldest,
       last_duplicate_at IS NOT NULL AS has_last_duplicate
FROM inbox.stats WHERE consumer LIKE 'st-%' OR consumer IS NULL ORDER BY consumer;

-- After the reset every consumer that has markers shows zero counters, with no rate yet.
SELECT count(*) > 0 AS some_consumers, bool_and(applied = 0 AND duplicates = 0) AS all_zero,
       count(duplicate_rate) AS with_rate, bool_and(stats_reset >= :'before_reset') AS reset_now
FROM inbox.stats;
SELECT * FROM stats_now WHERE consumer = 'st-before';
-- Without markers or counters, a registered consumer keeps its row, with nothing counted and
-- nothing retained.
SELECT inbox.forget('st-before', 'b-1');
SELECT count(*) AS st_before_rows FROM inbox.stats WHERE consumer = 'st-before';

-- Committed claims count as applied; a false answer counts as a duplicate.
SELECT inbox.claim('st-orders', 'o-1'), inbox.claim('st-orders', 'o-2');
SELECT inbox.claim('st-orders', 'o-1') AS duplicate;

-- A claim counts only when its transaction commits.
BEGIN;
SELECT inbox.claim('st-orders', 'o-3');
SELECT applied AS applied_before_commit FROM inbox.stats WHERE consumer = 'st-orders';
COMMIT;
SELECT applied AS applied_after_commit FROM inbox.stats WHERE consumer = 'st-orders';

-- Rolled back: not counted (nor the marker kept).
BEGIN;
SELECT inbox.claim('st-orders', 'o-rolled-back');
ROLLBACK;
BEGIN;
SELECT inbox.claim('st-orders', 'o-failed');
SELECT 1 / 0;
ROLLBACK;

-- Savepoints: what is rolled back to a savepoint is not counted, what is released is.
BEGIN;
SELECT inbox.claim('st-orders', 'o-4');
SAVEPOINT a;
SELECT inbox.claim('st-orders', 'o-5'), inbox.claim('st-audit', 'o-5');
ROLLBACK TO SAVEPOINT a;
SAVEPOINT b;
SELECT inbox.claim('st-orders', 'o-6');
SAVEPOINT c;
SELECT inbox.claim('st-audit', 'o-6');
RELEASE SAVEPOINT c;
RELEASE SAVEPOINT b;
SAVEPOINT d;
SAVEPOINT e;
SELECT inbox.claim('st-audit', 'o-7');
RELEASE SAVEPOINT e;
ROLLBACK TO SAVEPOINT d;
COMMIT;

-- The same through plpgsql exception blocks: a failed handler's claim goes with its block.
CREATE FUNCTION st_fail(payload jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'handler failed'; END $$;
CREATE FUNCTION st_ok(payload jsonb) RETURNS void LANGUAGE sql AS 'SELECT';
DO $$
BEGIN
    FOR i IN 1..3 LOOP
        BEGIN
            PERFORM inbox.apply('st-audit', 'a-' || i, 'st_fail(jsonb)', '{}');
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
        BEGIN
            PERFORM inbox.apply('st-audit', 'b-' || i, 'st_ok(jsonb)', '{}');
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
    END LOOP;
END $$;

-- A duplicate counts when it is answered, even if its transaction then rolls back: the
-- caller skipped a delivery on that answer.
BEGIN;
SELECT inbox.claim('st-audit', 'o-6') AS duplicate_then_rollback;
ROLLBACK;

-- orders: o-1, o-2, o-3, o-4, o-6 applied; one duplicate. audit: o-6, b-1..b-3 applied; one.
SELECT * FROM stats_now;
SELECT count(*) AS stamped_after_reset FROM inbox.stats
WHERE consumer LIKE 'st-%' AND stats_reset >= :'before_reset' AND last_duplicate_at >= stats_reset;

-- Counters outlive their markers: a consumer whose markers are all gone keeps its row.
SELECT inbox.claim('st-gone', 'g-1'), inbox.claim('st-gone', 'g-1');
SELECT inbox.forget('st-gone', 'g-1');
SELECT * FROM stats_now WHERE consumer = 'st-gone';

-- retained is exact up to 1000 markers; beyond that, the planner's estimate from the last
-- ANALYZE scaled to the table's current size (exact here: ANALYZE saw every row).
INSERT INTO inbox.messages (consumer, message_id)
SELECT 'st-big', 'm-' || g FROM generate_series(1, 3000) g;
ANALYZE inbox.markers;
SELECT consumer, retained BETWEEN 2970 AND 3030 AS close_estimate, retained > 1000 AS above_exact
FROM inbox.stats WHERE consumer = 'st-big';
SELECT consumer, retained FROM inbox.stats WHERE consumer = 'st-orders';
-- The oldest marker is the consumer's minimum processed_at.
SELECT (SELECT oldest_processed_at FROM inbox.stats WHERE consumer = 'st-orders')
     = (SELECT min(processed_at) FROM inbox.messages WHERE consumer = 'st-orders') AS oldest_is_min;
DELETE FROM inbox.messages WHERE consumer = 'st-big';

-- inbox.stats_reset() zeroes this database's counters.
SELECT clock_timestamp() AS before_second_reset \gset
SELECT inbox.stats_reset();
SELECT * FROM stats_now;
SELECT bool_and(stats_reset >= :'before_second_reset') AS reset_again FROM inbox.stats;
SELECT inbox.claim('st-orders', 'o-1') AS duplicate_after_reset;
SELECT consumer, applied, duplicates, duplicate_rate FROM inbox.stats WHERE consumer = 'st-orders';

-- inbox.track_stats = off: claims are not counted; only superusers change it.
SET inbox.track_stats = off;
SELECT inbox.claim('st-orders', 'o-1'), inbox.claim('st-orders', 'o-untracked');
RESET inbox.track_stats;
SELECT consumer, applied, duplicates FROM inbox.stats WHERE consumer = 'st-orders';

-- Privileges: neither the view, nor the counters, nor the reset are open to PUBLIC.
CREATE ROLE regress_inbox_monitor;
GRANT USAGE ON SCHEMA inbox TO regress_inbox_monitor;
SET ROLE regress_inbox_monitor;
SELECT outcome('SELECT * FROM inbox.stats');
SELECT outcome('SELECT inbox.stats_reset()');
SELECT outcome('SET inbox.track_stats = off');
RESET ROLE;
-- What the README tells a DBA to grant to a monitoring role.
GRANT SELECT ON inbox.stats TO regress_inbox_monitor;
GRANT EXECUTE ON FUNCTION inbox.stats_counters(), inbox.marker_counts() TO regress_inbox_monitor;
SET ROLE regress_inbox_monitor;
SELECT consumer, applied, duplicates FROM inbox.stats WHERE consumer = 'st-orders';
SELECT outcome('SELECT inbox.stats_reset()');
SELECT outcome('SELECT count(*) FROM inbox.messages');
RESET ROLE;
SELECT p.oid::regprocedure AS function, a.grantee::regrole, a.privilege_type
FROM pg_proc p CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
WHERE p.oid IN ('inbox.stats_reset()'::regprocedure, 'inbox.stats_counters()'::regprocedure)
  AND a.grantee <> p.proowner ORDER BY 1, 2;

DROP OWNED BY regress_inbox_monitor;
DROP ROLE regress_inbox_monitor;
DROP VIEW stats_now;
DROP FUNCTION st_fail(jsonb), st_ok(jsonb);

-- retained on a table loaded a moment ago, before any ANALYZE: it is estimated from a sample
-- of the table's pages, not from the planner's statistics, so it is close whatever they say
-- (here they say the table is nearly empty). 300,000 markers of three consumers (50%, 30% and
-- 20%, interleaved as live traffic interleaves them): each estimate within 5% of the exact
-- count, and oldest_processed_at exact.
ANALYZE inbox.markers;
SELECT count(inbox.consumer_id(c)) AS registered FROM unnest(ARRAY['st-half', 'st-third', 'st-fifth']) c;
INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key)
SELECT inbox.marker_time_bucket(t), r.id, inbox.marker_time_offset(t), inbox.message_key('m-' || g)
FROM (SELECT g, now() - (300000 - g) * interval '10 ms' AS t,
             CASE WHEN g % 10 < 5 THEN 'st-half' WHEN g % 10 < 8 THEN 'st-third' ELSE 'st-fifth' END
                 AS consumer
      FROM generate_series(1, 300000) g) m
JOIN inbox.consumer_registry r ON r.name = m.consumer;
SELECT s.consumer, abs(s.retained - e.exact) <= 0.05 * e.exact AS retained_within_5_percent,
       s.oldest_processed_at = e.oldest AS oldest_exact
FROM inbox.stats s
JOIN (SELECT consumer, count(*) AS exact, min(processed_at) AS oldest
      FROM inbox.messages GROUP BY consumer) e USING (consumer)
WHERE s.consumer LIKE 'st-%' AND e.exact > 1000
ORDER BY s.consumer;
DELETE FROM inbox.markers
WHERE consumer_id IN (SELECT id FROM inbox.consumer_registry WHERE name IN ('st-half', 'st-third', 'st-fifth'));

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
