// The kept plans of the natural-idempotency statements, one set per backend: a statement is
// prepared once per (table, kind, set of columns, version column) and reused until its table's
// facts go stale (upsert_table.hpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "access/attnum.h"
#include "nodes/bitmapset.h"
#include "utils/jsonb.h"
}

#include "upsert/upsert_table.hpp"

enum class NaturalWrite { upsert_versioned, insert_once };

// The columns an incoming json row writes (key columns included), in the order of its keys.
struct IncomingColumns {
    int count;
    const AttrNumber* attnums;
    bool as_remembered;  // every key was found where the table remembered it (column_named)
};

// The statement writing exactly `columns`; version is InvalidAttrNumber for insert_once.
// Prepared and kept on first use.
CachedStatement* lookup_statement(TargetTable* table, NaturalWrite kind, AttrNumber version,
                                  const IncomingColumns& columns);

// Runs the statement for the incoming json row, whose value for column attnum is
// values[attnum - 1]; true when a row was inserted or updated.
bool execute_statement(CachedStatement* statement, Datum row, const JsonbValue* values);
