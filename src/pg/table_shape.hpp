// Whether a table is still as the extension created it, so that a row may be written into it
// directly (no statement): a plain table (no partitions, triggers, rules or row-level security,
// which only the executor's statements apply), with the same columns (names and types in the
// same order, nothing dropped, no CHECK constraint and no generated or identity column), and the
// key its ON CONFLICT clause infers as the only unique index.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "access/tupdesc.h"
#include "utils/relcache.h"
}

namespace pg {

bool plain_table(Relation table);

bool columns_as_created(TupleDesc columns, const char* const names[], const Oid types[], int count);

// The primary key, when it is on the columns key[0..count) in that order, valid, not deferrable,
// and no other index is unique or an exclusion constraint (ON CONFLICT on those columns could
// infer another arbiter); InvalidOid otherwise.
Oid sole_unique_key(Relation table, const AttrNumber key[], int count);

// Whether index_oid is a valid b-tree of `table` on exactly the columns[0..count), in that order
// (no expression), so that a scan of it with equality or range keys on them finds the rows.
bool btree_on(Oid index_oid, Oid table, const AttrNumber columns[], int count);

}  // namespace pg
