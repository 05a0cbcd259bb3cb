-- inbox 1.3, from 1.2. The one source of what 1.3 changes: the full script inbox--1.3.sql is
-- built from inbox--1.2.sql followed by this file (Makefile), so that a fresh install and the
-- update from 1.2 (or 1.1, or 1.0) run the same statements.
\echo Use "ALTER EXTENSION inbox UPDATE TO '1.3'" to load this file. \quit
