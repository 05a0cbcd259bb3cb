\set ECHO none
-- Helpers of the regression tests (sql/*.sql), included by the files that use them with
--   \getenv abs_srcdir PG_ABS_SRCDIR
--   \i :abs_srcdir/test/regress/helpers.sql
-- and not echoed: the expected output shows the include, not this file.
--
-- Every file passes alone and in any order in one database: it removes at its end what it
-- created (markers, tables, functions, roles, database settings), and a file that reads the
-- statistics counters resets them first. The helpers are the exception: each include creates
-- or replaces them, and they stay.

-- The SQLSTATE and message of a statement's error, or 'no error'.
CREATE OR REPLACE FUNCTION public.outcome(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- What a statement answers: its first value as text ('' for none), or the SQLSTATE and message of
-- its error.
CREATE OR REPLACE FUNCTION public.answer(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE statement INTO result;
    RETURN coalesce(result, '');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

\set ECHO all
