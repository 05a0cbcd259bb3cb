// What the natural-idempotency functions know about a target table, one cache per backend.
//
// A table's facts (its primary key, the types its columns name) are read once and dropped,
// together with the statements prepared for the table (upsert_plan.hpp), when the table changes
// (relcache invalidation: ALTER TABLE, RENAME, DROP, new indexes), when a type of one of its
// columns changes (TYPEOID) and when any schema or operator changes (NAMESPACEOID, OPEROID),
// because the statements' text names all of these. Callers lock the table before asking, which
// also delivers pending invalidations, so facts read under old names are never used.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "pg_config_manual.h"
}

struct CachedStatement;

// A column found by name, kept so that the next call asking in the same place with the same name
// is answered by one comparison instead of a catalog lookup.
struct RememberedColumn {
    int name_length;  // 0: nothing remembered
    char name[NAMEDATALEN];
    AttrNumber attnum;
};

struct TargetTable {
    Oid relid;  // hash key
    bool stale;
    int attribute_count;  // attnums of user columns are 1 .. attribute_count
    int key_count;
    AttrNumber key_columns[INDEX_MAX_KEYS];  // the primary key, in index order
    int type_hash_count;
    uint32* type_hashes;          // TYPEOID hash values of the types the column definitions name
    CachedStatement* statements;  // prepared for this table, newest first
    int remembered_count;         // attribute_count + 1 places
    RememberedColumn* remembered;
    // The statement of the last row read whose keys were then remembered at places 0 .. n - 1,
    // kept until a remembered place changes: a row whose n keys are all found where they are
    // remembered writes the same columns (upsert_plan.cpp).
    CachedStatement* last_statement;
};

// The table's facts, read on first use. The caller holds a lock on relid. Errors when the
// relation is gone, is not a table or has no (immediate) primary key.
TargetTable* lookup_target_table(Oid relid);

bool is_key_column(const TargetTable* table, AttrNumber attnum);

// The user column called `name` (`length` bytes, no terminator needed), or InvalidAttrNumber.
// The answer is remembered at `place` (0 .. attribute_count; any other place remembers nothing):
// a caller that asks for the same names in the same places on every call (the keys of one kind
// of message, in the order a jsonb object keeps them) reads them from there, and the facts of a
// changed table, with what they remember, are read anew. *as_remembered tells whether the answer
// came from there (a place that changes forgets table->last_statement).
AttrNumber column_named(TargetTable* table, const char* name, int length, int place,
                        bool* as_remembered);

// Where the cache and its statements live (a child of TopMemoryContext).
MemoryContext target_table_memory();

// The statements of a table gone stale: freed once no call (further up this backend's stack)
// runs them any more. Defined with the statements (upsert_plan.cpp), which the cache drops
// through it.
void retire_statements(CachedStatement* statements);
