// See upsert_plan.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include "pg/guard.hpp"
#include "pg/spi.hpp"
#include "upsert/upsert_parameters.hpp"
#include "upsert/upsert_plan.hpp"
#include "upsert/upsert_statement.hpp"

struct CachedStatement {
    NaturalWrite kind;
    AttrNumber version;
    Bitmapset* columns;
    SPIPlanPtr plan;
    int executing;  // calls running the plan now: a stale statement is freed only at zero
    int parameter_count;
    ColumnInput* inputs;  // typed parameters, one per column; nullptr: the json row is $1
    CachedStatement* next;
};

namespace {

// Statements of stale tables that a call (further up this backend's stack) is still running.
CachedStatement* retired_statements = nullptr;

void free_statement(CachedStatement* statement) {
    SPI_freeplan(statement->plan);
    bms_free(statement->columns);
    if (statement->inputs != nullptr) pfree(statement->inputs);
    pfree(statement);
}

// Frees the retired statements no call is running any more.
void free_idle_retired_statements() {
    CachedStatement** link = &retired_statements;
    while (CachedStatement* statement = *link) {
        if (statement->executing > 0) {
            link = &statement->next;
            continue;
        }
        *link = statement->next;
        free_statement(statement);
    }
}

char* render_sql(const inbox::StatementShape& shape, NaturalWrite kind) {
    Datum sql = pg::run_cpp([&]() -> Datum {
        std::string text = kind == NaturalWrite::upsert_versioned
                               ? inbox::upsert_versioned_sql(shape)
                               : inbox::insert_once_sql(shape);
        // pstrdup may ereport while text is alive: guarded turns that into an exception.
        return PointerGetDatum(pg::guarded([&] { return pstrdup(text.c_str()); }));
    });
    return DatumGetCString(sql);
}

// The "<" of the version column's type (its default btree ordering), schema-qualified.
void version_less_than(Form_pg_attribute version, inbox::StatementShape* shape) {
    TypeCacheEntry* type = lookup_type_cache(version->atttypid, TYPECACHE_LT_OPR);
    if (!OidIsValid(type->lt_opr))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                        errmsg("version column \"%s\" has type %s, which has no ordering",
                               NameStr(version->attname), format_type_be(version->atttypid)),
                        errhint("Use an orderable version column, such as bigint or "
                                "timestamptz.")));
    HeapTuple operator_tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(type->lt_opr));
    if (!HeapTupleIsValid(operator_tuple))
        elog(ERROR, "cache lookup failed for operator %u", type->lt_opr);
    auto* less_than = (Form_pg_operator)GETSTRUCT(operator_tuple);
    shape->less_than_schema = get_namespace_name(less_than->oprnamespace);
    shape->less_than_name = pstrdup(NameStr(less_than->oprname));
    ReleaseSysCache(operator_tuple);
}

CachedStatement* prepare_statement(TargetTable* table, NaturalWrite kind, AttrNumber version,
                                   const Bitmapset* columns) {
    MemoryContext cache_context = target_table_memory();
    Relation rel = relation_open(table->relid, NoLock);
    TupleDesc desc = RelationGetDescr(rel);
    int column_count = bms_num_members(columns);
    auto* shape_columns =
        static_cast<inbox::StatementColumn*>(palloc(column_count * sizeof(inbox::StatementColumn)));
    inbox::StatementShape shape{};
    shape.schema = get_namespace_name(RelationGetNamespace(rel));
    shape.table = RelationGetRelationName(rel);
    shape.columns = shape_columns;
    shape.column_count = column_count;

    auto* parameter_types = static_cast<Oid*>(palloc(column_count * sizeof(Oid)));
    shape.typed_parameters = true;
    int i = 0;
    for (int attnum = -1; (attnum = bms_next_member(columns, attnum)) >= 0; i++) {
        Form_pg_attribute column = TupleDescAttr(desc, attnum - 1);
        shape_columns[i].name = NameStr(column->attname);
        shape_columns[i].type =
            format_type_extended(column->atttypid, column->atttypmod,
                                 FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
        shape_columns[i].is_key = is_key_column(table, static_cast<AttrNumber>(attnum));
        parameter_types[i] = column->atttypid;
        if (!converts_from_text(column->atttypid)) shape.typed_parameters = false;
    }
    if (kind == NaturalWrite::upsert_versioned) {
        Form_pg_attribute version_column = TupleDescAttr(desc, version - 1);
        shape.version_column = NameStr(version_column->attname);
        version_less_than(version_column, &shape);
    }

    Oid jsonb_type = JSONBOID;
    SPIPlanPtr plan =
        shape.typed_parameters
            ? pg::prepare_kept_plan(render_sql(shape, kind), column_count, parameter_types)
            : pg::prepare_kept_plan(render_sql(shape, kind), 1, &jsonb_type);

    auto* statement =
        static_cast<CachedStatement*>(MemoryContextAlloc(cache_context, sizeof(CachedStatement)));
    statement->inputs = nullptr;
    statement->parameter_count = shape.typed_parameters ? column_count : 1;
    if (shape.typed_parameters) {
        statement->inputs = static_cast<ColumnInput*>(
            MemoryContextAllocZero(cache_context, column_count * sizeof(ColumnInput)));
        i = 0;
        for (int attnum = -1; (attnum = bms_next_member(columns, attnum)) >= 0; i++) {
            Form_pg_attribute column = TupleDescAttr(desc, attnum - 1);
            prepare_column_input(&statement->inputs[i], static_cast<AttrNumber>(attnum),
                                 column->atttypid, column->atttypmod, cache_context);
        }
    }
    relation_close(rel, NoLock);

    MemoryContext caller_context = MemoryContextSwitchTo(cache_context);
    statement->columns = bms_copy(columns);
    MemoryContextSwitchTo(caller_context);
    statement->kind = kind;
    statement->version = version;
    statement->plan = plan;
    statement->executing = 0;
    statement->next = table->statements;
    table->statements = statement;
    return statement;
}

}  // namespace

CachedStatement* lookup_statement(TargetTable* table, NaturalWrite kind, AttrNumber version,
                                  const Bitmapset* columns) {
    for (CachedStatement* statement = table->statements; statement != nullptr;
         statement = statement->next)
        if (statement->kind == kind && statement->version == version &&
            bms_equal(statement->columns, columns))
            return statement;
    return prepare_statement(table, kind, version, columns);
}

bool execute_statement(CachedStatement* statement, Datum row, const JsonbValue* values) {
    bool typed = statement->inputs != nullptr;
    Datum* const parameters =
        typed ? static_cast<Datum*>(palloc(statement->parameter_count * sizeof(Datum))) : &row;
    char* const nulls = typed ? static_cast<char*>(palloc(statement->parameter_count)) : nullptr;
    volatile int result = 0;
    // Counted from before the conversion: a domain check could call back into this backend's
    // cache, which must not free the statement in use.
    statement->executing++;
    PG_TRY();
    {
        if (typed)
            make_typed_parameters(statement->inputs, statement->parameter_count, values, parameters,
                                  nulls);
        pg::spi_connect();
        result = SPI_execute_plan(statement->plan, parameters, nulls, false, 0);
    }
    PG_FINALLY();
    { statement->executing--; }
    PG_END_TRY();
    if (result != SPI_OK_INSERT)
        elog(ERROR, "natural-idempotency statement failed: %s", SPI_result_code_string(result));
    bool written = SPI_processed > 0;
    SPI_finish();
    return written;
}

void retire_statements(CachedStatement* statements) {
    while (CachedStatement* statement = statements) {
        statements = statement->next;
        statement->next = retired_statements;
        retired_statements = statement;
    }
    free_idle_retired_statements();
}
