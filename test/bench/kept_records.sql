-- Records of :kept messages delivered the day before, as the default inbox.outbox_retention
-- (a week) keeps them: ids of that time (UUIDv7 layout: the milliseconds first), below those of
-- the messages a benchmark sends next. Then the table vacuumed, as autovacuum would have done
-- since, and the writes flushed by a checkpoint: neither during the measurement that follows.
INSERT INTO inbox.outbox_delivered (created_at, delivered_at, id, attempts, destination)
SELECT t, t, (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7000'
              || lpad(to_hex(i), 16, '0'))::uuid, 1, 'bench'
FROM generate_series(1, :kept) i,
     LATERAL (SELECT now() - interval '1 day' + i * interval '1 ms') s(t);
VACUUM ANALYZE inbox.outbox_delivered;
CHECKPOINT;
