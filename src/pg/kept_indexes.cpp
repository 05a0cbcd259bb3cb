// See kept_indexes.hpp.
#include "pg/kept_indexes.hpp"

extern "C" {
#include "access/genam.h"
#include "catalog/index.h"
#include "executor/executor.h"
#include "nodes/pg_list.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
}

namespace pg {
namespace {

// The table's index list, read with the table locked (as ExecOpenIndices reads it); the
// IndexInfos are built at the first open.
void keep_index_list(KeptIndexes* kept, Relation table) {
    if (kept->memory == nullptr)
        kept->memory =
            AllocSetContextCreate(CacheMemoryContext, "inbox kept indexes", ALLOCSET_SMALL_SIZES);
    else
        MemoryContextReset(kept->memory);
    kept->count = 0;
    kept->oids = nullptr;
    kept->infos = nullptr;
    kept->table = RelationGetRelid(table);
    List* oids = RelationGetForm(table)->relhasindex ? RelationGetIndexList(table) : NIL;
    kept->oids = static_cast<Oid*>(
        MemoryContextAlloc(kept->memory, sizeof(Oid) * Max(list_length(oids), 1)));
    ListCell* cell;
    foreach (cell, oids) kept->oids[kept->count++] = lfirst_oid(cell);
    list_free(oids);
    kept->valid = true;
}

// What ExecInsertIndexTuples and FormIndexDatum would prepare in the statement's memory
// (ExecPrepareQual, ExecPrepareExprList), prepared once in the kept memory.
IndexInfo* keep_index_info(Relation index) {
    IndexInfo* info = BuildIndexInfo(index);
    if (info->ii_Predicate != NIL)
        info->ii_PredicateState = ExecInitQual(reinterpret_cast<List*>(expression_planner(
                                                   reinterpret_cast<Expr*>(info->ii_Predicate))),
                                               nullptr);
    if (info->ii_Expressions != NIL) {
        List* states = NIL;
        ListCell* cell;
        foreach (cell, info->ii_Expressions)
            states = lappend(
                states,
                ExecInitExpr(expression_planner(static_cast<Expr*>(lfirst(cell))), nullptr));
        info->ii_ExpressionsState = states;
    }
    return info;
}

}  // namespace

void open_kept_indexes(KeptIndexes* kept, ResultRelInfo* target) {
    Relation table = target->ri_RelationDesc;
    if (!kept->valid || kept->table != RelationGetRelid(table)) keep_index_list(kept, table);
    target->ri_NumIndices = 0;
    if (kept->count == 0) return;
    auto* indexes = static_cast<Relation*>(palloc(sizeof(Relation) * kept->count));
    for (int i = 0; i < kept->count; i++) indexes[i] = index_open(kept->oids[i], RowExclusiveLock);
    target->ri_NumIndices = kept->count;
    target->ri_IndexRelationDescs = indexes;
    IndexInfo** infos;
    if (!kept->valid) {
        // An invalidation of an index while it was being opened: this call's own, as
        // ExecOpenIndices builds them (the list, read with the table locked, holds still).
        infos = static_cast<IndexInfo**>(palloc(sizeof(IndexInfo*) * kept->count));
        for (int i = 0; i < kept->count; i++) infos[i] = BuildIndexInfo(indexes[i]);
    } else {
        if (kept->infos == nullptr) {
            MemoryContext caller = MemoryContextSwitchTo(kept->memory);
            auto* built = static_cast<IndexInfo**>(palloc(sizeof(IndexInfo*) * kept->count));
            for (int i = 0; i < kept->count; i++) built[i] = keep_index_info(indexes[i]);
            MemoryContextSwitchTo(caller);
            kept->infos = built;
        }
        infos = kept->infos;
        // What an index access method keeps for the length of one statement (BRIN's and GIN's
        // state, which points to the index opened now) goes in this call's memory.
        for (int i = 0; i < kept->count; i++) {
            infos[i]->ii_AmCache = nullptr;
            infos[i]->ii_Context = CurrentMemoryContext;
        }
    }
    target->ri_IndexRelationInfo = infos;
}

void forget_kept_indexes(KeptIndexes* kept, Oid relid) {
    if (!kept->valid) return;
    bool forget = relid == InvalidOid || relid == kept->table;
    for (int i = 0; !forget && i < kept->count; i++) forget = relid == kept->oids[i];
    // The memory is freed at the next open, not here: this may run while an open uses it.
    if (forget) kept->valid = false;
}

}  // namespace pg
