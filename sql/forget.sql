-- inbox.forget: deliberate reprocessing.
SELECT inbox.claim('reports', 'r-1');
SELECT inbox.claim('reports', 'r-1') AS duplicate;
SELECT inbox.forget('reports', 'r-1') AS removed;
SELECT inbox.claim('reports', 'r-1') AS processed_again;

-- Forgetting what is not there removes nothing.
SELECT inbox.forget('reports', 'never-seen') AS removed;
-- Only the named consumer's marker goes.
SELECT inbox.claim('audit', 'r-1');
SELECT inbox.forget('reports', 'r-1');
SELECT consumer FROM inbox.messages WHERE message_id = 'r-1';
-- Byte-wise: 'R-1' is another message.
SELECT inbox.forget('audit', 'R-1') AS removed_other_case;

-- A forget rolled back keeps the marker.
BEGIN;
SELECT inbox.forget('audit', 'r-1');
ROLLBACK;
SELECT inbox.claim('audit', 'r-1') AS still_duplicate;

-- Clean up: each file leaves the database as it found it.
DELETE FROM inbox.messages;
