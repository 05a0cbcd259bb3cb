-- CREATE EXTENSION and ALTER EXTENSION UPDATE refuse a schema "inbox" that the installing role
-- does not control: owned by another role, open to other roles' CREATE, or holding objects that
-- are not the extension's. Each case in a database of its own, as a database owner would
-- prepare it.
SELECT current_database() AS regress_database, current_user AS regress_user \gset
CREATE ROLE regress_guard_owner;
-- The installer, a superuser of his own: the errors name him, whoever runs the tests.
CREATE ROLE regress_guard_installer SUPERUSER LOGIN;
CREATE DATABASE regress_inbox_guard OWNER regress_guard_owner;
\c regress_inbox_guard regress_guard_installer
\set VERBOSITY terse

-- The database owner prepares the schema, with an exact match for drivers that bind varchar,
-- and an operator that matches the text of the check's own hint better than pg_catalog's does:
-- were the check to resolve it, it would run as the installer.
SET ROLE regress_guard_owner;
CREATE SCHEMA inbox;
CREATE FUNCTION inbox.claim(consumer varchar, message_id varchar) RETURNS boolean
    LANGUAGE sql AS 'SELECT true';
CREATE FUNCTION inbox.run_as_installer(text, name) RETURNS text LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'the planted operator ran as %', current_user; END $$;
CREATE OPERATOR inbox.|| (LEFTARG = text, RIGHTARG = name, FUNCTION = inbox.run_as_installer);
RESET ROLE;
CREATE EXTENSION inbox;
SELECT count(*) AS installed FROM pg_extension WHERE extname = 'inbox';

-- Made the installer's, the planted objects are still refused.
ALTER SCHEMA inbox OWNER TO CURRENT_USER;
CREATE EXTENSION inbox;
DROP FUNCTION inbox.claim(varchar, varchar);
DROP FUNCTION inbox.run_as_installer(text, name) CASCADE;

-- CREATE granted to another role: refused.
GRANT CREATE ON SCHEMA inbox TO regress_guard_owner;
CREATE EXTENSION inbox;
REVOKE CREATE ON SCHEMA inbox FROM regress_guard_owner;

-- An empty schema of the installer's own is fine.
CREATE EXTENSION inbox;
SELECT extversion FROM pg_extension WHERE extname = 'inbox';
DROP EXTENSION inbox;

-- The update from 1.0 checks the same: a 1.0 installed where someone could add objects.
CREATE EXTENSION inbox VERSION '1.0';
SELECT inbox.claim('guard', 'm-1');
CREATE FUNCTION inbox.claim(consumer varchar, message_id varchar) RETURNS boolean
    LANGUAGE sql AS 'SELECT true';
ALTER EXTENSION inbox UPDATE;
DROP FUNCTION inbox.claim(varchar, varchar);
ALTER SCHEMA inbox OWNER TO regress_guard_owner;
SET ROLE regress_guard_owner;
CREATE FUNCTION inbox.run_as_installer(text, name) RETURNS text LANGUAGE plpgsql
    AS $$ BEGIN RAISE EXCEPTION 'the planted operator ran as %', current_user; END $$;
CREATE OPERATOR inbox.|| (LEFTARG = text, RIGHTARG = name, FUNCTION = inbox.run_as_installer);
RESET ROLE;
ALTER EXTENSION inbox UPDATE;
DROP FUNCTION inbox.run_as_installer(text, name) CASCADE;
ALTER SCHEMA inbox OWNER TO CURRENT_USER;
ALTER EXTENSION inbox UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'inbox';
SELECT inbox.claim('guard', 'm-1') AS duplicate_after_update;

\c :regress_database :regress_user
DROP DATABASE regress_inbox_guard;
DROP ROLE regress_guard_owner, regress_guard_installer;
