-- inbox 1.2, from 1.1. The one source of what 1.2 changes: the full script inbox--1.2.sql is
-- built from inbox--1.1.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.1 (or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.2'" to load this file. \quit

-- ---- Purge workers: a cycle that gave way to the purge lock, and when the last error was ------

-- inbox.worker_status() and the columns 1.2 adds: blocked_since (since when every worker of the
-- database gave way to another purge holding the purge lock) and last_error_at. Who may read the
-- workers' status stays decided by one privilege, EXECUTE on inbox.worker_status(), which 1.1's
-- grants and grant_access(..., 'monitor') give: this function asks for it itself, and is
-- therefore left executable by PUBLIC, so that no grant made before the update (nor pg_dump's
-- copy of one) falls short of the new view.
CREATE FUNCTION inbox.worker_status_1_2(
    OUT database_oid oid, OUT pid integer, OUT state text,
    OUT last_cycle_start timestamptz, OUT last_cycle_end timestamptz,
    OUT last_cycle_deleted bigint, OUT total_deleted bigint, OUT last_error text,
    OUT blocked_since timestamptz, OUT last_error_at timestamptz)
RETURNS SETOF record
LANGUAGE c VOLATILE PARALLEL RESTRICTED
AS 'MODULE_PATHNAME', 'inbox_worker_status_1_2';

-- Replaced, not dropped: the grants on the view and the views built on it stay.
CREATE OR REPLACE VIEW inbox.workers AS
    SELECT d.datname AS database, w.pid, w.state, w.last_cycle_start, w.last_cycle_end,
           w.last_cycle_deleted, w.total_deleted, w.last_error, w.blocked_since, w.last_error_at
    FROM inbox.worker_status_1_2() w
    LEFT JOIN pg_catalog.pg_database d ON d.oid OPERATOR(pg_catalog.=) w.database_oid;
