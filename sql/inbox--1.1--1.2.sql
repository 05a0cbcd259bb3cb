-- inbox 1.2, from 1.1. The one source of what 1.2 changes: the full script inbox--1.2.sql is
-- built from inbox--1.1.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.1 (or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.2'" to load this file. \quit

-- ---- drop guard --------------------------------------------------------------------------------
-- Every way of dropping the extension meets the guard. The library's object-access hook refuses
-- to delete the markers table with its markers, whatever the statement (src/drop_guard_hook.cpp);
-- the event trigger fires for DROP OWNED too, so that the library (and with it the hook) is loaded
-- before DROP OWNED drops anything, in a session without shared_preload_libraries as well. The
-- tags of an event trigger cannot be altered: it is created again.
DROP EVENT TRIGGER inbox_guard_drop;
CREATE EVENT TRIGGER inbox_guard_drop ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION', 'DROP SCHEMA', 'DROP OWNED')
    EXECUTE FUNCTION inbox.guard_drop();

-- ---- settings that need the preload ------------------------------------------------------------
-- max_attempts counts failed attempts kept in shared memory, which exists only when the library
-- is preloaded: setting it without the preload is accepted (it applies from the first start with
-- the preload) with a warning that says so (src/max_attempts_warning.cpp).
CREATE FUNCTION inbox.warn_max_attempts_without_preload() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', 'inbox_warn_max_attempts_without_preload';
COMMENT ON FUNCTION inbox.warn_max_attempts_without_preload() IS
    'Warns that a consumer''s max_attempts has no effect while inbox is not preloaded.';
CREATE TRIGGER max_attempts_needs_preload
    AFTER INSERT OR UPDATE OF max_attempts ON inbox.consumer_registry
    FOR EACH ROW WHEN (NEW.max_attempts IS NOT NULL)
    EXECUTE FUNCTION inbox.warn_max_attempts_without_preload();
REVOKE ALL ON FUNCTION inbox.warn_max_attempts_without_preload() FROM PUBLIC;
