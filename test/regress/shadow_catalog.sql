\set ECHO none
-- A schema "shadow" that shadows pg_catalog, for the tests of a hostile search_path: run by the
-- schema's owner (a database owner with no privilege on the extension), included with
--   \i :abs_srcdir/test/regress/shadow_catalog.sql
-- It holds a look-alike of every function, aggregate and operator of pg_catalog that a PL/pgSQL
-- function can stand in for (same name, same argument types), a domain named as each base type,
-- case-insensitive collations named as the deterministic ones, and tables named as the
-- extension's. Each look-alike records in shadow.calls that it was called: put before
-- pg_catalog in a search_path, it is what every name written without its schema resolves to.
SET search_path = pg_catalog;
CREATE TABLE shadow.calls (what text);
GRANT INSERT ON shadow.calls TO PUBLIC;
CREATE FUNCTION shadow.spy(what text) RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog
    AS $$ BEGIN INSERT INTO shadow.calls VALUES (what); RETURN true; END $$;

CREATE TEMPORARY VIEW shadowable AS
SELECT o.kind, o.name, o.what, o.args, o.result, o.returns_set
FROM (SELECT 'function' AS kind, p.proname::text AS name, p.oid::regprocedure::text AS what,
             ARRAY(SELECT t::regtype::text FROM unnest(p.proargtypes) t) AS args,
             p.prorettype::regtype::text AS result, p.proretset AS returns_set,
             p.proargtypes::oid[] AS types, p.prorettype AS result_type
      FROM pg_proc p
      WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'f'
        AND p.provariadic = 0
      UNION ALL
      -- an aggregate's look-alike needs a transition function: the look-alike function, with
      -- the state in front of the arguments
      SELECT 'aggregate', p.proname, p.oid::regprocedure::text,
             ARRAY(SELECT t::regtype::text FROM unnest(p.proargtypes) t), 'boolean', false,
             p.proargtypes::oid[], 'boolean'::regtype
      FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid
      WHERE p.pronamespace = 'pg_catalog'::regnamespace AND a.aggkind = 'n'
        AND p.provariadic = 0
      UNION ALL
      SELECT 'operator', o.oprname, o.oid::regoperator::text,
             ARRAY(SELECT t::regtype::text FROM unnest(ARRAY[o.oprleft, o.oprright]) t
                   WHERE t <> 0),
             o.oprresult::regtype::text, false, ARRAY[o.oprleft, o.oprright], o.oprresult
      FROM pg_operator o
      WHERE o.oprnamespace = 'pg_catalog'::regnamespace) o
-- the types a PL/pgSQL function can take and return: no internal, cstring, "any", ...
WHERE NOT EXISTS (SELECT FROM unnest(o.types) t JOIN pg_type y ON y.oid = t
                  WHERE y.typtype = 'p' AND (y.typname NOT LIKE 'any%' OR y.typname = 'any'))
  AND (o.result_type IN ('void'::regtype, 'record'::regtype)
       OR (SELECT y.typtype <> 'p' OR y.typname LIKE 'any_%' FROM pg_type y
           WHERE y.oid = o.result_type));

DO $$
DECLARE
    o record;
    n int := 0;
BEGIN
    FOR o IN SELECT * FROM shadowable ORDER BY kind, what LOOP
        n := n + 1;
        EXECUTE format('CREATE FUNCTION shadow.%I(%s) RETURNS %s%s LANGUAGE plpgsql AS %L',
            CASE o.kind WHEN 'function' THEN o.name ELSE 'look_alike_' || n END,
            array_to_string(CASE o.kind WHEN 'aggregate' THEN ARRAY['boolean'] || o.args
                                        ELSE o.args END, ', '),
            CASE WHEN o.returns_set THEN 'SETOF ' ELSE '' END, o.result,
            format('BEGIN PERFORM shadow.spy(%L); RETURN%s; END', o.kind || ' ' || o.what,
                   CASE WHEN o.returns_set OR o.result = 'void' THEN ''
                        WHEN o.kind = 'aggregate' THEN ' true' ELSE ' NULL' END));
        IF o.kind = 'operator' THEN
            EXECUTE format('CREATE OPERATOR shadow.%s (%s FUNCTION = shadow.look_alike_%s)', o.name,
                CASE WHEN cardinality(o.args) = 2
                     THEN format('LEFTARG = %s, RIGHTARG = %s,', o.args[1], o.args[2])
                     ELSE format('RIGHTARG = %s,', o.args[1]) END, n);
        ELSIF o.kind = 'aggregate' THEN
            EXECUTE format('CREATE AGGREGATE shadow.%I(%s) (SFUNC = shadow.look_alike_%s, '
                           'STYPE = boolean)', o.name,
                CASE WHEN cardinality(o.args) = 0 THEN '*' ELSE array_to_string(o.args, ', ') END, n);
        END IF;
    END LOOP;
    FOR o IN SELECT t.typname FROM pg_type t
             WHERE t.typnamespace = 'pg_catalog'::regnamespace AND t.typtype IN ('b', 'r', 'm', 'e')
               AND NOT (t.typelem <> 0 AND t.typsubscript = 'array_subscript_handler'::regproc)
             ORDER BY 1 LOOP
        EXECUTE format('CREATE DOMAIN shadow.%I AS pg_catalog.%I CHECK (shadow.spy(%L))',
                       o.typname, o.typname, 'type ' || o.typname);
    END LOOP;
END $$;
DROP VIEW shadowable;

CREATE COLLATION shadow."C" (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE COLLATION shadow."POSIX" (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE COLLATION shadow.ucs_basic (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

CREATE TABLE shadow.messages (consumer text, message_id text, processed_at timestamptz);
CREATE TABLE shadow.markers (time_bucket int, consumer_id smallint, time_offset "char",
                             message_key bytea);
CREATE TABLE shadow.marker_details (consumer_id smallint, message_key bytea, result jsonb);
CREATE TABLE shadow.consumer_registry (id smallint, name text, retention interval,
                                       max_attempts int);
RESET search_path;
\set ECHO all
