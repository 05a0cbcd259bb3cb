# A fresh CREATE EXTENSION inbox (sql/inbox--1.1.sql) and ALTER EXTENSION inbox UPDATE from 1.0
# (sql/inbox--1.0--1.1.sql) give the same objects: every member of the extension with its
# definition (functions, views, tables with their columns, defaults, indexes, constraints and
# triggers, types with their labels), comments and privileges (a default ACL and the same ACL
# written out count as one).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use InboxTest;

my $node = inbox_node('same', "inbox.purge_worker = off\n");
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('postgres', 'CREATE DATABASE updated');
$node->safe_psql('fresh', 'CREATE EXTENSION inbox');
$node->safe_psql('updated', q{CREATE EXTENSION inbox VERSION '1.0'; ALTER EXTENSION inbox UPDATE});

my $objects = q{
WITH members AS (
    SELECT d.classid, d.objid FROM pg_depend d
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
      AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'inbox'))
SELECT pg_describe_object(m.classid, m.objid, 0) || ': ' || CASE m.classid
    WHEN 'pg_proc'::regclass THEN
        pg_get_functiondef(m.objid)
        || (SELECT coalesce(proacl, acldefault('f', proowner))::text FROM pg_proc WHERE oid = m.objid)
        || coalesce(obj_description(m.objid, 'pg_proc'), '')
    WHEN 'pg_class'::regclass THEN
        (SELECT relkind::text || ' ' || coalesce(relacl, acldefault('r', relowner))::text
         FROM pg_class WHERE oid = m.objid)
        || coalesce(obj_description(m.objid, 'pg_class'), '') || coalesce(pg_get_viewdef(m.objid), '')
        || (SELECT coalesce(string_agg(attname || ' ' || format_type(atttypid, atttypmod) || ' '
                                       || attnotnull || ' ' || attcollation::regcollation::text || ' '
                                       || coalesce(pg_get_expr(ad.adbin, ad.adrelid), ''),
                                       ', ' ORDER BY attnum), '')
            FROM pg_attribute a LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
            WHERE attrelid = m.objid AND attnum > 0 AND NOT attisdropped)
        || (SELECT coalesce(string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY 1), '')
            FROM pg_index WHERE indrelid = m.objid)
        || (SELECT coalesce(string_agg(conname || ' ' || pg_get_constraintdef(oid), '; ' ORDER BY 1), '')
            FROM pg_constraint WHERE conrelid = m.objid)
        || (SELECT coalesce(string_agg(pg_get_triggerdef(oid), '; ' ORDER BY 1), '')
            FROM pg_trigger WHERE tgrelid = m.objid)
    WHEN 'pg_type'::regclass THEN
        coalesce((SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder) FROM pg_enum
                  WHERE enumtypid = m.objid), '')
        || coalesce(obj_description(m.objid, 'pg_type'), '')
    ELSE ''
    END
FROM members m ORDER BY 1};

my $fresh = $node->safe_psql('fresh', $objects);
my $updated = $node->safe_psql('updated', $objects);
my @members = split /\n/, $fresh;
cmp_ok(scalar @members, '>', 30, 'the extension has its objects');
is($updated, $fresh, 'the update from 1.0 gives the objects of a fresh install');

$node->stop;
done_testing();
