// See upsert_statement.hpp: the SQL text of the natural-idempotency statements. Pure C++.
#include "upsert/upsert_statement.hpp"

namespace inbox {

namespace {

// The alias of the stored row in ON CONFLICT ... WHERE, and of the incoming row.
constexpr std::string_view stored_alias = "\"stored\"";
constexpr std::string_view incoming_alias = "\"incoming\"";

std::string parameter(std::size_t column_index) {
    return '$' + std::to_string(column_index + 1);
}

// pg_catalog.jsonb_to_record($1) AS incoming (col type, ...), over the columns `wanted` picks.
template <typename Wanted>
std::string incoming_record(const StatementShape& shape, Wanted wanted) {
    std::string definitions;
    for (std::size_t i = 0; i < shape.column_count; ++i) {
        const StatementColumn& column = shape.columns[i];
        if (!wanted(column)) continue;
        if (!definitions.empty()) definitions += ", ";
        definitions += quote_identifier(column.name);
        definitions += ' ';
        definitions += column.type;
    }
    std::string record = "pg_catalog.jsonb_to_record($1) AS ";
    record += incoming_alias;
    record += " (" + definitions + ")";
    return record;
}

// The quoted names of the columns `wanted` picks, comma-separated.
template <typename Wanted>
std::string column_list(const StatementShape& shape, Wanted wanted) {
    std::string list;
    for (std::size_t i = 0; i < shape.column_count; ++i) {
        if (!wanted(shape.columns[i])) continue;
        if (!list.empty()) list += ", ";
        list += quote_identifier(shape.columns[i].name);
    }
    return list;
}

bool any_column(const StatementColumn&) {
    return true;
}
bool key_column(const StatementColumn& column) {
    return column.is_key;
}
bool updated_column(const StatementColumn& column) {
    return !column.is_key;
}

// INSERT INTO s.t AS stored (cols) VALUES ($1, ...) ON CONFLICT (key cols), or with
// SELECT cols FROM jsonb_to_record($1) AS incoming(col type, ...) in place of VALUES.
std::string insert_with_conflict_target(const StatementShape& shape) {
    std::string columns = column_list(shape, any_column);
    std::string sql = "INSERT INTO ";
    sql += quote_identifier(shape.schema);
    sql += '.';
    sql += quote_identifier(shape.table);
    sql += " AS ";
    sql += stored_alias;
    sql += " (" + columns + ")";
    if (shape.typed_parameters) {
        std::string parameters;
        for (std::size_t i = 0; i < shape.column_count; ++i)
            parameters += (i > 0 ? ", " : "") + parameter(i);
        sql += " VALUES (" + parameters + ")";
    } else {
        sql += " SELECT " + columns + " FROM " + incoming_record(shape, any_column);
    }
    sql += " ON CONFLICT (" + column_list(shape, key_column) + ")";
    return sql;
}

}  // namespace

std::string quote_identifier(std::string_view name) {
    std::string quoted;
    quoted.reserve(name.size() + 2);
    quoted += '"';
    for (char c : name) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    quoted += '"';
    return quoted;
}

// The incoming values are the statement's own parameters (or its json row), never EXCLUDED:
// reading EXCLUDED.col would need SELECT on every column written, where ON CONFLICT itself needs
// it only on the key columns and this statement on the version column it compares.
std::string upsert_versioned_sql(const StatementShape& shape) {
    std::string sql = insert_with_conflict_target(shape);
    std::string version = quote_identifier(shape.version_column);
    auto is_version = [&](const StatementColumn& column) {
        return column.name == shape.version_column;
    };
    std::string incoming_version;
    sql += " DO UPDATE SET ";
    if (shape.typed_parameters) {
        bool first = true;
        for (std::size_t i = 0; i < shape.column_count; ++i) {
            const StatementColumn& column = shape.columns[i];
            if (is_version(column)) incoming_version = parameter(i);
            if (column.is_key) continue;
            if (!first) sql += ", ";
            first = false;
            sql += quote_identifier(column.name) + " = " + parameter(i);
        }
    } else {
        std::string updated = column_list(shape, updated_column);
        sql += "(" + updated + ") = (SELECT " + updated + " FROM " +
               incoming_record(shape, updated_column) + ")";
        incoming_version =
            "(SELECT " + version + " FROM " + incoming_record(shape, is_version) + ")";
    }

    std::string stored_version = std::string(stored_alias) + '.' + version;
    sql += " WHERE " + stored_version + " IS NULL OR " + stored_version + " OPERATOR(";
    sql += quote_identifier(shape.less_than_schema);
    sql += '.';
    sql += shape.less_than_name;  // an operator name is made of symbol characters only
    sql += ") " + incoming_version;
    return sql;
}

std::string insert_once_sql(const StatementShape& shape) {
    return insert_with_conflict_target(shape) + " DO NOTHING";
}

}  // namespace inbox
