// The SQL text of the natural-idempotency statements (inbox.upsert_versioned, inbox.insert_once),
// built from catalog facts only: no PostgreSQL call, so it is unit-tested on its own.
//
// Every identifier is quoted, every name is schema-qualified and the version comparison names
// its operator as OPERATOR(schema.op): neither a hostile search_path nor a column name chosen by
// an attacker can change what the statement means.
//
// The incoming row arrives in one of two forms:
//  - typed parameters: VALUES ($1, ..., $n), one per column, already converted by the caller
//    (the fast path: the statement is exactly the one a user would write by hand);
//  - the json row itself as $1, converted by pg_catalog.jsonb_to_record with the column types
//    (for arrays, composites and json columns, whose conversion from json the executor owns).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace inbox {

// A column the statement writes: its name and its type as format_type spells it (qualified,
// with its typmod).
struct StatementColumn {
    std::string_view name;
    std::string_view type;
    bool is_key;  // part of the primary key: the ON CONFLICT target, never updated
};

struct StatementShape {
    std::string_view schema;
    std::string_view table;
    const StatementColumn* columns;  // the columns the incoming row carries, key columns included
    std::size_t column_count;
    bool typed_parameters;  // VALUES ($1, ...) rather than jsonb_to_record($1)
    // upsert_versioned only: the version column (one of the columns) and the "<" of its type.
    std::string_view version_column;
    std::string_view less_than_schema;
    std::string_view less_than_name;
};

// "name" with embedded quotes doubled: always quoted, so any name is taken literally.
std::string quote_identifier(std::string_view name);

// INSERT ... ON CONFLICT (key) DO UPDATE SET <non-key columns> WHERE stored version IS NULL
// OR stored version < incoming version.
std::string upsert_versioned_sql(const StatementShape& shape);

// INSERT ... ON CONFLICT (key) DO NOTHING.
std::string insert_once_sql(const StatementShape& shape);

}  // namespace inbox
