// See upsert_table.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "pg/compat.hpp"
#include "pg/relcache_invalidation.hpp"
#include "upsert/upsert_table.hpp"

namespace {

MemoryContext cache_context = nullptr;
HTAB* target_tables = nullptr;
// Bumped by every invalidation we receive, so that facts read while one arrived stay stale.
uint64 invalidation_count = 0;
bool some_table_stale = false;

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
void forget_relation(Oid relid) {
    invalidation_count++;
    if (!OidIsValid(relid)) return mark_all_stale();
    auto* table = static_cast<TargetTable*>(hash_search(target_tables, &relid, HASH_FIND, nullptr));
    if (table != nullptr) mark_stale(table);
}

void forget_type(Datum, pg::SyscacheId, uint32 hash_value) {
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
void forget_all(Datum, pg::SyscacheId, uint32) {
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
    pg::forget_on_relcache_invalidation(forget_relation);
    CacheRegisterSyscacheCallback(TYPEOID, forget_type, (Datum)0);
    CacheRegisterSyscacheCallback(NAMESPACEOID, forget_all, (Datum)0);
    CacheRegisterSyscacheCallback(OPEROID, forget_all, (Datum)0);
}

void retire_stale_tables() {
    some_table_stale = false;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, target_tables);
    while (auto* table = static_cast<TargetTable*>(hash_seq_search(&scan))) {
        if (!table->stale) continue;
        retire_statements(table->statements);
        if (table->type_hashes != nullptr) pfree(table->type_hashes);
        if (table->remembered != nullptr) pfree(table->remembered);
        hash_search(target_tables, &table->relid, HASH_REMOVE, nullptr);
    }
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

    Oid primary_key = pg::primary_key_index(rel);
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

    if (table->remembered != nullptr) pfree(table->remembered);
    table->remembered_count = table->attribute_count + 1;
    table->remembered = static_cast<RememberedColumn*>(
        MemoryContextAllocZero(cache_context, sizeof(RememberedColumn) * table->remembered_count));
    table->last_statement = nullptr;
    table->stale = invalidation_count != invalidations_before;
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
        table->remembered = nullptr;
        table->remembered_count = 0;
        table->last_statement = nullptr;
    }
    // A failed load leaves the entry stale: the next lookup removes it and tries again.
    if (table->stale) {
        some_table_stale = true;
        load_table_facts(table);
    }
    return table;
}

AttrNumber column_named(TargetTable* table, const char* name, int length, int place,
                        bool* as_remembered) {
    bool can_remember = place >= 0 && place < table->remembered_count;
    *as_remembered = false;
    if (can_remember) {
        const RememberedColumn* remembered = &table->remembered[place];
        if (remembered->name_length == length && memcmp(remembered->name, name, length) == 0) {
            *as_remembered = true;
            return remembered->attnum;
        }
    }
    if (length >= NAMEDATALEN) return InvalidAttrNumber;
    char terminated[NAMEDATALEN];
    memcpy(terminated, name, length);
    terminated[length] = '\0';
    AttrNumber attnum = get_attnum(table->relid, terminated);
    if (attnum <= 0) return InvalidAttrNumber;
    if (can_remember) {
        RememberedColumn* remembered = &table->remembered[place];
        remembered->name_length = length;
        memcpy(remembered->name, name, length);
        remembered->attnum = attnum;
        table->last_statement = nullptr;
    }
    return attnum;
}

MemoryContext target_table_memory() {
    ensure_cache();
    return cache_context;
}
