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
    int column_count;
    SPIPlanPtr plan;
    int executing;  // calls running the plan now: a stale statement is freed only at zero
    // typed parameters, one per column (with the column's typmod): their types and inputs;
    // inputs is nullptr when the json row is $1
    pg::ParameterTypes parameters;
    ColumnInput* inputs;
    CachedStatement* next;
};

namespace {

// Statements of stale tables that a call (further up this backend's stack) is still running.
CachedStatement* retired_statements = nullptr;

void free_statement(CachedStatement* statement) {
    SPI_freeplan(statement->plan);
    bms_free(statement->columns);
    if (statement->inputs != nullptr) {
        pfree(statement->inputs);
        pfree(const_cast<Oid*>(statement->parameters.types));
        pfree(const_cast<int32*>(statement->parameters.typmods));
    }
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
    auto* parameter_typmods = static_cast<int32*>(palloc(column_count * sizeof(int32)));
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
        parameter_typmods[i] = column->atttypmod;
        if (!converts_from_text(column->atttypid)) shape.typed_parameters = false;
    }
    if (kind == NaturalWrite::upsert_versioned) {
        Form_pg_attribute version_column = TupleDescAttr(desc, version - 1);
        shape.version_column = NameStr(version_column->attname);
        version_less_than(version_column, &shape);
    }

    char* sql = render_sql(shape, kind);
    Oid jsonb_type = JSONBOID;
    SPIPlanPtr plan = shape.typed_parameters ? nullptr : pg::prepare_kept_plan(sql, 1, &jsonb_type);
    auto* statement =
        static_cast<CachedStatement*>(MemoryContextAlloc(cache_context, sizeof(CachedStatement)));
    statement->inputs = nullptr;
    statement->parameters = {};
    if (shape.typed_parameters) {
        // the plan keeps reading the parameter types: they live as long as the statement
        statement->parameters = {
            column_count,
            static_cast<Oid*>(MemoryContextAlloc(cache_context, column_count * sizeof(Oid))),
            static_cast<int32*>(MemoryContextAlloc(cache_context, column_count * sizeof(int32)))};
        memcpy(const_cast<Oid*>(statement->parameters.types), parameter_types,
               column_count * sizeof(Oid));
        memcpy(const_cast<int32*>(statement->parameters.typmods), parameter_typmods,
               column_count * sizeof(int32));
        PG_TRY();
        { plan = pg::prepare_kept_plan(sql, &statement->parameters); }
        PG_CATCH();
        {
            pfree(const_cast<Oid*>(statement->parameters.types));
            pfree(const_cast<int32*>(statement->parameters.typmods));
            pfree(statement);
            PG_RE_THROW();
        }
        PG_END_TRY();
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
    statement->column_count = column_count;
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
                                  const IncomingColumns& columns) {
    // The same keys as the last row read, at the same places: no set to build and compare.
    CachedStatement* last = table->last_statement;
    if (columns.as_remembered && last != nullptr && last->kind == kind &&
        last->version == version && last->column_count == columns.count)
        return last;

    Bitmapset* wanted = nullptr;
    for (int i = 0; i < columns.count; i++) wanted = bms_add_member(wanted, columns.attnums[i]);
    CachedStatement* found = nullptr;
    for (CachedStatement* statement = table->statements; statement != nullptr;
         statement = statement->next)
        if (statement->kind == kind && statement->version == version &&
            bms_equal(statement->columns, wanted)) {
            found = statement;
            break;
        }
    if (found == nullptr) found = prepare_statement(table, kind, version, wanted);
    bms_free(wanted);
    table->last_statement = found;
    return found;
}

bool execute_statement(CachedStatement* statement, Datum row, const JsonbValue* values) {
    bool typed = statement->inputs != nullptr;
    int count = statement->parameters.count;
    Datum* const parameters = typed ? static_cast<Datum*>(palloc(count * sizeof(Datum))) : nullptr;
    bool* const nulls = typed ? static_cast<bool*>(palloc(count * sizeof(bool))) : nullptr;
    volatile int result = 0;
    // Counted from before the conversion: a domain check could call back into this backend's
    // cache, which must not free the statement in use.
    statement->executing++;
    PG_TRY();
    {
        if (typed) make_typed_parameters(statement->inputs, count, values, parameters, nulls);
        pg::spi_connect();
        result = typed ? pg::execute_typed_plan(statement->plan, &statement->parameters, parameters,
                                                nulls)
                       : SPI_execute_plan(statement->plan, &row, nullptr, false, 0);
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
