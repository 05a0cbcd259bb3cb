#include "upsert_statement.hpp"

namespace inbox {

namespace {

// The alias of the stored row in ON CONFLICT ... WHERE, and of the incoming row.
constexpr std::string_view stored_alias = "\"stored\"";
constexpr std::string_view incoming_alias = "\"incoming\"";

// INSERT INTO s.t AS stored (cols) VALUES ($1, ...) ON CONFLICT (key cols), or with
// SELECT cols FROM jsonb_to_record($1) AS incoming(col type, ...) in place of VALUES.
std::string insert_with_conflict_target(const StatementShape& shape) {
    std::string column_list;
    std::string definition_list;
    std::string parameter_list;
    std::string key_list;
    for (std::size_t i = 0; i < shape.column_count; ++i) {
        const StatementColumn& column = shape.columns[i];
        std::string name = quote_identifier(column.name);
        if (i > 0) {
            column_list += ", ";
            definition_list += ", ";
            parameter_list += ", ";
        }
        column_list += name;
        definition_list += name;
        definition_list += ' ';
        definition_list += column.type;
        parameter_list += '$' + std::to_string(i + 1);
        if (column.is_key) {
            if (!key_list.empty()) key_list += ", ";
            key_list += name;
        }
    }

    std::string sql = "INSERT INTO ";
    sql += quote_identifier(shape.schema);
    sql += '.';
    sql += quote_identifier(shape.table);
    sql += " AS ";
    sql += stored_alias;
    sql += " (" + column_list + ")";
    if (shape.typed_parameters) {
        sql += " VALUES (" + parameter_list + ")";
    } else {
        sql += " SELECT " + column_list + " FROM pg_catalog.jsonb_to_record($1) AS ";
        sql += incoming_alias;
        sql += " (" + definition_list + ")";
    }
    sql += " ON CONFLICT (" + key_list + ")";
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

std::string upsert_versioned_sql(const StatementShape& shape) {
    std::string sql = insert_with_conflict_target(shape);
    sql += " DO UPDATE SET ";
    bool first = true;
    for (std::size_t i = 0; i < shape.column_count; ++i) {
        const StatementColumn& column = shape.columns[i];
        if (column.is_key) continue;
        if (!first) sql += ", ";
        first = false;
        std::string name = quote_identifier(column.name);
        sql.append(name).append(" = EXCLUDED.").append(name);
    }

    std::string version = quote_identifier(shape.version_column);
    std::string stored_version = std::string(stored_alias) + '.' + version;
    sql += " WHERE " + stored_version + " IS NULL OR " + stored_version + " OPERATOR(";
    sql += quote_identifier(shape.less_than_schema);
    sql += '.';
    sql += shape.less_than_name;  // an operator name is made of symbol characters only
    sql += ") EXCLUDED." + version;
    return sql;
}

std::string insert_once_sql(const StatementShape& shape) {
    return insert_with_conflict_target(shape) + " DO NOTHING";
}

}  // namespace inbox
