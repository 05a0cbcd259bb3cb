-- The purge a user would write by hand on 1.0's table: batches of ctids found through an index
-- on processed_at, in one transaction (hand_purge_batch() until 0) or committing after each batch
-- (CALL hand_purge_committing()). The yardstick of purge_rate.sh and purge_bursts.sh.
CREATE INDEX messages_processed_at ON inbox.messages (processed_at);
CREATE FUNCTION hand_purge_batch() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    deleted bigint;
BEGIN
    DELETE FROM inbox.messages WHERE ctid = ANY (ARRAY (
        SELECT ctid FROM inbox.messages WHERE processed_at < now() - interval '30 days'
        ORDER BY processed_at LIMIT 10000));
    GET DIAGNOSTICS deleted = ROW_COUNT;
    RETURN deleted;
END $$;
CREATE PROCEDURE hand_purge_committing() LANGUAGE plpgsql AS $$
BEGIN
    WHILE hand_purge_batch() > 0 LOOP
        COMMIT;
    END LOOP;
END $$;
