// Kept plans of the natural-idempotency statements, one set per backend.
//
// A statement is prepared once per (table, kind, set of columns, version column) and reused; the
// table's facts (primary key) are read once. Both are dropped when the table changes (relcache
// invalidation: ALTER TABLE, RENAME, DROP, new indexes), when a type of one of its columns changes
// (TYPEOID) and when any schema or operator changes (NAMESPACEOID, OPEROID), because the SQL
// text names all of these. Callers lock the table before asking, which also delivers pending
// invalidations, so a plan built from stale names is never used.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "nodes/bitmapset.h"
#include "pg_config_manual.h"
#include "utils/jsonb.h"
}

enum class NaturalWrite { upsert_versioned, insert_once };

struct CachedStatement;

// What the cache knows about a target table.
struct TargetTable {
    Oid relid;  // hash key
    bool stale;
    int attribute_count;  // attnums of user columns are 1 .. attribute_count
    int key_count;
    AttrNumber key_columns[INDEX_MAX_KEYS];  // the primary key, in index order
    int type_hash_count;
    uint32* type_hashes;  // TYPEOID hash values of the types the column definitions name
    CachedStatement* statements;
};

// The table's facts, read on first use. The caller holds a lock on relid. Errors when the
// relation is gone, is not a table or has no primary key.
TargetTable* lookup_target_table(Oid relid);

bool is_key_column(const TargetTable* table, AttrNumber attnum);

// The statement writing exactly `columns` (attribute numbers, key columns included); version is
// InvalidAttrNumber for insert_once. Prepared and kept on first use.
CachedStatement* lookup_statement(TargetTable* table, NaturalWrite kind, AttrNumber version,
                                  const Bitmapset* columns);

// Runs the statement for the incoming json row, whose value for column attnum is
// values[attnum - 1]; true when a row was inserted or updated.
bool execute_statement(CachedStatement* statement, Datum row, const JsonbValue* values);
