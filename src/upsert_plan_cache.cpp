// Kept plans of the natural-idempotency statements; see upsert_plan_cache.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

#include "pg/guard.hpp"
#include "upsert_plan_cache.hpp"
#include "upsert_statement.hpp"

// How one typed parameter is made from its json value: the column type's input function.
struct ColumnInput {
    AttrNumber attnum;
    Oid ioparam;
    int32 typmod;
    FmgrInfo function;
};

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

MemoryContext cache_context = nullptr;
HTAB* target_tables = nullptr;
// Bumped by every invalidation we receive, so that facts read while one arrived stay stale.
uint64 invalidation_count = 0;
bool some_table_stale = false;
// Statements of stale tables that a call (further up this backend's stack) is still running.
CachedStatement* retired_statements = nullptr;

void mark_stale(TargetTable* table) {
    table->stale = true;
    some_table_stale = true;
}

void mark_all_stale() {
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, target_tables);
    while (auto* table = static_cast<TargetTable*>(hash_seq_search(&scan))) mark_stale(table);
}

// Invalidation callbacks only mark: a plan may be running right now, so freeing waits for the
// next lookup.
void forget_relation(Datum, Oid relid) {
    invalidation_count++;
    if (!OidIsValid(relid)) return mark_all_stale();
    auto* table = static_cast<TargetTable*>(hash_search(target_tables, &relid, HASH_FIND, nullptr));
    if (table != nullptr) mark_stale(table);
}

void forget_type(Datum, int, uint32 hash_value) {
    invalidation_count++;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, target_tables);
    while (auto* table = static_cast<TargetTable*>(hash_seq_search(&scan))) {
        for (int i = 0; i < table->type_hash_count; i++)
            if (hash_value == 0 || table->type_hashes[i] == hash_value) {
                mark_stale(table);
                break;
            }
    }
}

// Schema and operator names appear in every statement: such changes are rare, drop everything.
void forget_all(Datum, int, uint32) {
    invalidation_count++;
    mark_all_stale();
}

void ensure_cache() {
    if (target_tables != nullptr) return;
    cache_context = AllocSetContextCreate(TopMemoryContext, "inbox natural-idempotency plans",
                                          ALLOCSET_SMALL_SIZES);
    HASHCTL control;
    control.keysize = sizeof(Oid);
    control.entrysize = sizeof(TargetTable);
    control.hcxt = cache_context;
    target_tables =
        hash_create("inbox target tables", 16, &control, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    CacheRegisterRelcacheCallback(forget_relation, (Datum)0);
    CacheRegisterSyscacheCallback(TYPEOID, forget_type, (Datum)0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, forget_all, (Datum)0);
    CacheRegisterSyscacheCallback(OPEROID, forget_all, (Datum)0);
}

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

void retire_stale_tables() {
    some_table_stale = false;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, target_tables);
    while (auto* table = static_cast<TargetTable*>(hash_seq_search(&scan))) {
        if (!table->stale) continue;
        while (CachedStatement* statement = table->statements) {
            table->statements = statement->next;
            statement->next = retired_statements;
            retired_statements = statement;
        }
        if (table->type_hashes != nullptr) pfree(table->type_hashes);
        hash_search(target_tables, &table->relid, HASH_REMOVE, nullptr);
    }
    free_idle_retired_statements();
}

void remember_type(TargetTable* table, Oid type) {
    table->type_hashes[table->type_hash_count++] = GetSysCacheHashValue1(TYPEOID, type);
}

// The relcache leaves a deferrable primary key out (it cannot arbitrate ON CONFLICT); it is
// looked for only to say so instead of "no primary key".
bool has_deferrable_primary_key(Relation rel) {
    List* indexes = RelationGetIndexList(rel);
    bool found = false;
    ListCell* cell;
    foreach (cell, indexes) {
        HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(cell)));
        if (!HeapTupleIsValid(tuple)) continue;
        auto* index = (Form_pg_index)GETSTRUCT(tuple);
        found = found || (index->indisprimary && !index->indimmediate);
        ReleaseSysCache(tuple);
    }
    list_free(indexes);
    return found;
}

// Reads the primary key and the column types of a table whose lock the caller holds.
void load_table_facts(TargetTable* table) {
    uint64 invalidations_before = invalidation_count;
    if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(table->relid)))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
                        errmsg("relation with OID %u does not exist", table->relid)));
    Relation rel = relation_open(table->relid, NoLock);
    char relkind = rel->rd_rel->relkind;
    if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
        ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                        errmsg("\"%s\" is not a table", RelationGetRelationName(rel))));

    Oid primary_key = RelationGetPrimaryKeyIndex(rel);
    if (!OidIsValid(primary_key) && has_deferrable_primary_key(rel))
        ereport(
            ERROR,
            (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
             errmsg("the primary key of table \"%s\" is DEFERRABLE", RelationGetRelationName(rel)),
             errdetail("ON CONFLICT, which arbitrates copies of a row, cannot use a deferrable "
                       "constraint."),
             errhint("Recreate the primary key as NOT DEFERRABLE.")));
    if (!OidIsValid(primary_key))
        ereport(ERROR, (errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
                        errmsg("table \"%s\" has no primary key", RelationGetRelationName(rel)),
                        errhint("inbox.upsert_versioned and inbox.insert_once find the row by its "
                                "primary key: add one.")));
    HeapTuple index_tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(primary_key));
    if (!HeapTupleIsValid(index_tuple))
        elog(ERROR, "cache lookup failed for index %u", primary_key);
    auto* index = (Form_pg_index)GETSTRUCT(index_tuple);
    table->key_count = index->indnkeyatts;
    for (int i = 0; i < index->indnkeyatts; i++) table->key_columns[i] = index->indkey.values[i];
    ReleaseSysCache(index_tuple);

    // A column definition names its type and, for an array, its element type.
    TupleDesc desc = RelationGetDescr(rel);
    table->attribute_count = desc->natts;
    if (table->type_hashes != nullptr) pfree(table->type_hashes);
    table->type_hashes =
        static_cast<uint32*>(MemoryContextAlloc(cache_context, sizeof(uint32) * 2 * desc->natts));
    table->type_hash_count = 0;
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute column = TupleDescAttr(desc, i);
        if (column->attisdropped) continue;
        remember_type(table, column->atttypid);
        Oid element = get_element_type(column->atttypid);
        if (OidIsValid(element)) remember_type(table, element);
    }
    relation_close(rel, NoLock);
    table->stale = invalidation_count != invalidations_before;
}

char* render_sql(const inbox::StatementShape& shape, NaturalWrite kind) {
    Datum sql = pg::sql_entry([&]() -> Datum {
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

SPIPlanPtr prepare_plan(const char* sql, int parameter_count, Oid* parameter_types) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    SPIPlanPtr plan = SPI_prepare(sql, parameter_count, parameter_types);
    if (plan == nullptr)
        elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
    SPI_keepplan(plan);
    SPI_finish();
    return plan;
}

// Whether a column's value is made by the type's input function from the json value's text, as
// jsonb_to_record does for such types: then the statement takes typed parameters. Arrays,
// composites and json types (or domains over them) get jsonb_to_record's own conversion.
bool converts_from_text(Oid type) {
    Oid base = getBaseType(type);
    return OidIsValid(base) && !OidIsValid(get_element_type(base)) &&
           get_typtype(base) != TYPTYPE_COMPOSITE && base != JSONOID && base != JSONBOID;
}

// The text the column type's input function reads, as jsonb_to_record makes it; NULL for null.
char* json_value_text(const JsonbValue* value) {
    switch (value->type) {
        case jbvNull:
            return nullptr;
        case jbvString:
            return pnstrdup(value->val.string.val, value->val.string.len);
        case jbvBool:
            return pstrdup(value->val.boolean ? "true" : "false");
        case jbvNumeric:
            return DatumGetCString(
                DirectFunctionCall1(numeric_out, NumericGetDatum(value->val.numeric)));
        case jbvBinary:
            return JsonbToCString(nullptr, value->val.binary.data, value->val.binary.len);
        default:
            elog(ERROR, "unexpected jsonb value type %d", (int)value->type);
    }
}

CachedStatement* prepare_statement(TargetTable* table, NaturalWrite kind, AttrNumber version,
                                   const Bitmapset* columns) {
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
    SPIPlanPtr plan = shape.typed_parameters
                          ? prepare_plan(render_sql(shape, kind), column_count, parameter_types)
                          : prepare_plan(render_sql(shape, kind), 1, &jsonb_type);

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
            ColumnInput* input = &statement->inputs[i];
            Oid function;
            getTypeInputInfo(column->atttypid, &function, &input->ioparam);
            fmgr_info_cxt(function, &input->function, cache_context);
            input->attnum = static_cast<AttrNumber>(attnum);
            input->typmod = column->atttypmod;
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

// Converts each value with its column type's input function (so a domain's constraints and a
// typmod apply, and a value that does not convert is an error, never NULL).
void make_typed_parameters(const CachedStatement* statement, const JsonbValue* values,
                           Datum* parameters, char* nulls) {
    for (int i = 0; i < statement->parameter_count; i++) {
        const ColumnInput* input = &statement->inputs[i];
        char* text = json_value_text(&values[input->attnum - 1]);
        parameters[i] = InputFunctionCall(const_cast<FmgrInfo*>(&input->function), text,
                                          input->ioparam, input->typmod);
        nulls[i] = text == nullptr ? 'n' : ' ';
    }
}

}  // namespace

bool is_key_column(const TargetTable* table, AttrNumber attnum) {
    for (int i = 0; i < table->key_count; i++)
        if (table->key_columns[i] == attnum) return true;
    return false;
}

TargetTable* lookup_target_table(Oid relid) {
    ensure_cache();
    if (some_table_stale) retire_stale_tables();
    bool found;
    auto* table = static_cast<TargetTable*>(hash_search(target_tables, &relid, HASH_ENTER, &found));
    if (!found) {
        table->stale = true;
        table->type_hashes = nullptr;
        table->type_hash_count = 0;
        table->statements = nullptr;
    }
    // A failed load leaves the entry stale: the next lookup removes it and tries again.
    if (table->stale) {
        some_table_stale = true;
        load_table_facts(table);
    }
    return table;
}

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
        if (typed) make_typed_parameters(statement, values, parameters, nulls);
        if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
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
