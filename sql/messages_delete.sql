-- The owner's DELETE through inbox.messages: written as deletes of the stored markers and of
-- their details, with the view's columns computed from the tables' own (messages_delete.cpp),
-- so that Citus can plan it too (test/citus/007_view_writes.pl). It takes exactly the markers
-- its condition names, and their details with them.
SELECT inbox.receive('del-a', 'old-' || g, '{"n": 1}') FROM generate_series(1, 3) g;
SELECT inbox.claim('del-a', 'new-' || g) FROM generate_series(1, 2) g;
SELECT inbox.claim('del-b', 'old-1');
UPDATE inbox.messages SET processed_at = now() - interval '40 days'
WHERE message_id LIKE 'old-%';
SELECT count(*) AS details FROM inbox.marker_details;

-- Deletes of the stored rows, not a row-by-row trigger.
EXPLAIN (COSTS OFF)
DELETE FROM inbox.messages WHERE processed_at < now() - interval '30 days';
DELETE FROM inbox.messages WHERE processed_at < now() - interval '30 days';
SELECT consumer, message_id FROM inbox.messages ORDER BY consumer, message_id;
SELECT count(*) AS details_left FROM inbox.marker_details;
SELECT inbox.claim('del-a', 'old-1') AS processed_again;

-- A condition on the id and one with a subquery over the view itself.
DELETE FROM inbox.messages WHERE consumer = 'del-a' AND message_id = 'new-1'
RETURNING consumer, message_id;
DELETE FROM inbox.messages m
WHERE EXISTS (SELECT FROM inbox.messages o
              WHERE o.consumer = m.consumer AND o.message_id = 'old-1')
  AND m.message_id = 'new-2';
SELECT consumer, message_id FROM inbox.messages ORDER BY consumer, message_id;

-- A volatile condition is left to the view's trigger, which takes each marker once.
DELETE FROM inbox.messages WHERE random() >= 0;
SELECT count(*) AS markers, (SELECT count(*) FROM inbox.marker_details) AS details
FROM inbox.markers;

-- The owner's INSERT and UPDATE through the view still go through its trigger.
INSERT INTO inbox.messages (consumer, message_id, processed_at)
VALUES ('del-c', 'imported-1', now() - interval '3 days');
UPDATE inbox.messages SET processed_at = now() - interval '100 days' WHERE consumer = 'del-c';
SELECT consumer, message_id, processed_at < now() - interval '99 days' AS aged
FROM inbox.messages;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
