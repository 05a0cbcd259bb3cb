#include "upsert/upsert_statement.hpp"

#include <gtest/gtest.h>

using inbox::StatementColumn;
using inbox::StatementShape;

namespace {

const StatementColumn invoice_columns[] = {
    {"id", "integer", true},
    {"status", "public.invoice_status", false},
    {"version", "bigint", false},
};

StatementShape invoice_shape() {
    return StatementShape{"billing", "invoices", invoice_columns, 3,
                          false,     "version",  "pg_catalog",    "<"};
}

}  // namespace

TEST(QuoteIdentifier, AlwaysQuotes) {
    EXPECT_EQ(inbox::quote_identifier("id"), "\"id\"");
    EXPECT_EQ(inbox::quote_identifier("Mixed Case"), "\"Mixed Case\"");
}

TEST(QuoteIdentifier, DoublesEmbeddedQuotes) {
    EXPECT_EQ(inbox::quote_identifier("a\"b"), "\"a\"\"b\"");
    EXPECT_EQ(inbox::quote_identifier("\""), "\"\"\"\"");
    // A name that tries to close the identifier and append SQL stays one identifier.
    EXPECT_EQ(inbox::quote_identifier("x\"); DROP TABLE t; --"), "\"x\"\"); DROP TABLE t; --\"");
}

TEST(UpsertVersionedSql, GuardsTheUpdateWithTheVersion) {
    EXPECT_EQ(
        inbox::upsert_versioned_sql(invoice_shape()),
        "INSERT INTO \"billing\".\"invoices\" AS \"stored\" (\"id\", \"status\", \"version\") "
        "SELECT \"id\", \"status\", \"version\" FROM pg_catalog.jsonb_to_record($1) AS "
        "\"incoming\" (\"id\" integer, \"status\" public.invoice_status, \"version\" bigint) "
        "ON CONFLICT (\"id\") DO UPDATE SET (\"status\", \"version\") = (SELECT \"status\", "
        "\"version\" FROM pg_catalog.jsonb_to_record($1) AS \"incoming\" (\"status\" "
        "public.invoice_status, \"version\" bigint)) WHERE \"stored\".\"version\" IS NULL OR "
        "\"stored\".\"version\" OPERATOR(\"pg_catalog\".<) (SELECT \"version\" FROM "
        "pg_catalog.jsonb_to_record($1) AS \"incoming\" (\"version\" bigint))");
}

TEST(UpsertVersionedSql, CompositeKeyIsTheConflictTargetAndNeverUpdated) {
    const StatementColumn columns[] = {
        {"tenant", "uuid", true},
        {"Order No", "bigint", true},
        {"at", "timestamp with time zone", false},
    };
    StatementShape shape{"s", "t", columns, 3, false, "at", "pg_catalog", "<"};
    std::string sql = inbox::upsert_versioned_sql(shape);
    EXPECT_NE(sql.find("ON CONFLICT (\"tenant\", \"Order No\") DO UPDATE SET (\"at\") = "
                       "(SELECT \"at\" FROM"),
              std::string::npos)
        << sql;
}

TEST(UpsertVersionedSql, UsesTheVersionTypesOwnOperator) {
    StatementShape shape = invoice_shape();
    shape.less_than_schema = "My Ops";
    shape.less_than_name = "<<<";
    EXPECT_NE(inbox::upsert_versioned_sql(shape).find("OPERATOR(\"My Ops\".<<<) (SELECT"),
              std::string::npos);
}

TEST(InsertOnceSql, DoesNothingOnConflict) {
    EXPECT_EQ(
        inbox::insert_once_sql(invoice_shape()),
        "INSERT INTO \"billing\".\"invoices\" AS \"stored\" (\"id\", \"status\", \"version\") "
        "SELECT \"id\", \"status\", \"version\" FROM pg_catalog.jsonb_to_record($1) AS "
        "\"incoming\" (\"id\" integer, \"status\" public.invoice_status, \"version\" bigint) "
        "ON CONFLICT (\"id\") DO NOTHING");
}

TEST(UpsertVersionedSql, TypedParametersTakeOneParameterPerColumn) {
    StatementShape shape = invoice_shape();
    shape.typed_parameters = true;
    EXPECT_EQ(
        inbox::upsert_versioned_sql(shape),
        "INSERT INTO \"billing\".\"invoices\" AS \"stored\" (\"id\", \"status\", \"version\") "
        "VALUES ($1, $2, $3) ON CONFLICT (\"id\") DO UPDATE SET \"status\" = $2, \"version\" "
        "= $3 WHERE \"stored\".\"version\" IS NULL OR \"stored\".\"version\" "
        "OPERATOR(\"pg_catalog\".<) $3");
}

TEST(InsertOnceSql, TypedParameters) {
    StatementShape shape = invoice_shape();
    shape.typed_parameters = true;
    EXPECT_EQ(
        inbox::insert_once_sql(shape),
        "INSERT INTO \"billing\".\"invoices\" AS \"stored\" (\"id\", \"status\", \"version\") "
        "VALUES ($1, $2, $3) ON CONFLICT (\"id\") DO NOTHING");
}
