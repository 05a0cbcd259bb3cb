// Every difference between the PostgreSQL majors this extension builds against (15 to 19), in
// one place: each shim takes the newest form's arguments and maps them onto the older calls.
// The rest of the sources call these and carry no version tests of their own.
#pragma once

extern "C" {
#include "postgres.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"  // VARSIZE, VARDATA and SET_VARSIZE left postgres.h in 16
#endif
#include "access/genam.h"
#include "access/tableam.h"
#include "access/tupdesc.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "parser/analyze.h"
#include "rewrite/rewriteManip.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/inval.h"
#include "utils/relcache.h"
}

#include <cstdlib>
#include <cstring>

// The library's initialisation function, exported with C linkage (fmgr.h declares it from 16 on).
#if PG_VERSION_NUM < 160000
extern "C" PGDLLEXPORT void _PG_init(void);
#endif

namespace pg {

// The privilege of role on a function or a schema (catalog: ProcedureRelationId or
// NamespaceRelationId): pg_proc_aclcheck and pg_namespace_aclcheck became object_aclcheck in 16.
inline AclResult object_privilege(Oid catalog, Oid object, Oid role, AclMode mode) {
#if PG_VERSION_NUM >= 160000
    return object_aclcheck(catalog, object, role, mode);
#else
    return catalog == NamespaceRelationId ? pg_namespace_aclcheck(object, role, mode)
                                          : pg_proc_aclcheck(object, role, mode);
#endif
}

// Memory for a GUC check hook's extra, of the allocator the GUC machinery frees it with:
// free() up to 15, guc_free() from 16 on (which crashes on memory malloc() gave). nullptr
// when out of memory (reported at LOG; the hook then refuses the value).
inline void* guc_extra_alloc(std::size_t size) {
#if PG_VERSION_NUM >= 160000
    return guc_malloc(LOG, size);
#else
    return malloc(size);
#endif
}

// The setting called name, nullptr when there is none (find_option is exported from 16 on).
inline config_generic* find_setting(const char* name) {
#if PG_VERSION_NUM >= 160000
    return find_option(name, false, true, ERROR);
#else
    config_generic** settings = get_guc_variables();
    for (int i = 0; i < GetNumConfigOptions(); i++)
        if (strcmp(settings[i]->name, name) == 0) return settings[i];
    return nullptr;
#endif
}

// This backend's number for its current top transaction, never reused within the backend's life
// (17 moved it into PGPROC.vxid).
inline LocalTransactionId local_transaction_id() {
#if PG_VERSION_NUM >= 170000
    return MyProc->vxid.lxid;
#else
    return MyProc->lxid;
#endif
}

// The argument of a syscache invalidation callback that names the cache.
#if PG_VERSION_NUM >= 190000
using SyscacheId = SysCacheIdentifier;
#else
using SyscacheId = int;
#endif

// The relation's primary key index, InvalidOid when it has none or only a deferrable one
// (18 made the deferrable case a choice).
inline Oid primary_key_index(Relation relation) {
#if PG_VERSION_NUM >= 180000
    return RelationGetPrimaryKeyIndex(relation, false);
#else
    return RelationGetPrimaryKeyIndex(relation);
#endif
}

// Whether row, about to be inserted, conflicts with no committed row in the arbiter indexes;
// false with *conflict set to the conflicting row's TID otherwise (18 added the TID of a row
// being updated, which an insert has not).
inline bool check_index_constraints(ResultRelInfo* target, TupleTableSlot* row, EState* estate,
                                    ItemPointer conflict, List* arbiters) {
#if PG_VERSION_NUM >= 180000
    ItemPointerData no_updated_row;
    ItemPointerSetInvalid(&no_updated_row);
    return ExecCheckIndexConstraints(target, row, estate, conflict, &no_updated_row, arbiters);
#else
    return ExecCheckIndexConstraints(target, row, estate, conflict, arbiters);
#endif
}

// The index entries of a speculatively inserted row, for ON CONFLICT DO NOTHING on arbiters;
// *conflicted tells whether a concurrent inserter of the same key made the insert withdraw.
// The list of deferred recheck indexes is freed: none of ours is deferrable. (16 added
// onlySummarizing; 19 turned the booleans into flags and reordered the arguments.)
inline void insert_speculative_index_tuples(ResultRelInfo* target, TupleTableSlot* row,
                                            EState* estate, List* arbiters, bool* conflicted) {
#if PG_VERSION_NUM >= 190000
    list_free(ExecInsertIndexTuples(target, estate, EIIT_NO_DUPE_ERROR, row, arbiters, conflicted));
#elif PG_VERSION_NUM >= 160000
    list_free(ExecInsertIndexTuples(target, row, estate, false, true, conflicted, arbiters, false));
#else
    list_free(ExecInsertIndexTuples(target, row, estate, false, true, conflicted, arbiters));
#endif
}

// The index entries of a row just inserted (no arbiter, no deferred check: our indexes are not
// deferrable); 16 added onlySummarizing, 19 made the flags one argument.
inline void insert_index_tuples(ResultRelInfo* target, TupleTableSlot* row, EState* estate) {
#if PG_VERSION_NUM >= 190000
    list_free(ExecInsertIndexTuples(target, estate, 0, row, NIL, nullptr));
#elif PG_VERSION_NUM >= 160000
    list_free(ExecInsertIndexTuples(target, row, estate, false, false, nullptr, NIL, false));
#else
    list_free(ExecInsertIndexTuples(target, row, estate, false, false, nullptr, NIL));
#endif
}

// Which index entries the new version of an updated row needs: none (a HOT update), all, or
// only the summarizing indexes' (15 had a boolean for all or none).
enum class UpdatedIndexes { none, all, summarizing };

// The row at tid updated to row's values; wait: for a transaction that writes or locks it, else
// TM_BeingModified (19 added the options).
inline TM_Result update_row(Relation table, ItemPointer tid, TupleTableSlot* row, CommandId cid,
                            Snapshot snapshot, bool wait, TM_FailureData* failure,
                            UpdatedIndexes* indexes) {
    LockTupleMode lock_mode;
#if PG_VERSION_NUM >= 160000
    TU_UpdateIndexes update_indexes = TU_None;
#if PG_VERSION_NUM >= 190000
    TM_Result result = table_tuple_update(table, tid, row, cid, 0, snapshot, InvalidSnapshot, wait,
                                          failure, &lock_mode, &update_indexes);
#else
    TM_Result result = table_tuple_update(table, tid, row, cid, snapshot, InvalidSnapshot, wait,
                                          failure, &lock_mode, &update_indexes);
#endif
    *indexes = update_indexes == TU_None          ? UpdatedIndexes::none
               : update_indexes == TU_Summarizing ? UpdatedIndexes::summarizing
                                                  : UpdatedIndexes::all;
#else
    bool update_indexes = false;
    TM_Result result = table_tuple_update(table, tid, row, cid, snapshot, InvalidSnapshot, wait,
                                          failure, &lock_mode, &update_indexes);
    *indexes = update_indexes ? UpdatedIndexes::all : UpdatedIndexes::none;
#endif
    return result;
}

// The row at tid deleted by cid, waiting for a transaction that writes or locks it (19 added the
// options).
inline TM_Result delete_row(Relation table, ItemPointer tid, CommandId cid, Snapshot snapshot,
                            TM_FailureData* failure) {
#if PG_VERSION_NUM >= 190000
    return table_tuple_delete(table, tid, cid, 0, snapshot, InvalidSnapshot, true, failure);
#else
    return table_tuple_delete(table, tid, cid, snapshot, InvalidSnapshot, true, failure, false);
#endif
}

// The index entries of the new version of an updated row (update_row), as ExecUpdate makes
// them; none of our indexes is deferrable.
inline void insert_updated_index_tuples(ResultRelInfo* target, TupleTableSlot* row, EState* estate,
                                        UpdatedIndexes indexes) {
    if (indexes == UpdatedIndexes::none) return;
#if PG_VERSION_NUM >= 190000
    uint32 flags = EIIT_IS_UPDATE;
    if (indexes == UpdatedIndexes::summarizing) flags |= EIIT_ONLY_SUMMARIZING;
    list_free(ExecInsertIndexTuples(target, estate, flags, row, NIL, nullptr));
#elif PG_VERSION_NUM >= 160000
    list_free(ExecInsertIndexTuples(target, row, estate, true, false, nullptr, NIL,
                                    indexes == UpdatedIndexes::summarizing));
#else
    list_free(ExecInsertIndexTuples(target, row, estate, true, false, nullptr, NIL));
#endif
}

// A hash table in shared memory of entries elements, all allocated at start-up (19 dropped the
// separate initial size).
inline HTAB* shmem_init_hash(const char* name, long entries, HASHCTL* info, int flags) {
#if PG_VERSION_NUM >= 190000
    return ShmemInitHash(name, entries, info, flags);
#else
    return ShmemInitHash(name, entries, entries, info, flags);
#endif
}

// A scan of index with nkeys scan keys (given to index_rescan) under snapshot, without
// instrumentation (18 added it, 19 the scan options).
inline IndexScanDesc begin_index_scan(Relation table, Relation index, Snapshot snapshot,
                                      int nkeys) {
#if PG_VERSION_NUM >= 190000
    return index_beginscan(table, index, snapshot, nullptr, nkeys, 0, SO_NONE);
#elif PG_VERSION_NUM >= 180000
    return index_beginscan(table, index, snapshot, nullptr, nkeys, 0);
#else
    return index_beginscan(table, index, snapshot, nkeys, 0);
#endif
}

// A sequential scan of the whole table under snapshot (19 added the scan options).
inline TableScanDesc begin_table_scan(Relation table, Snapshot snapshot) {
#if PG_VERSION_NUM >= 190000
    return table_beginscan(table, snapshot, 0, nullptr, SO_NONE);
#else
    return table_beginscan(table, snapshot, 0, nullptr);
#endif
}

// Completes a tuple descriptor built entry by entry (TupleDescInitEntry): 19 caches what tuple
// deforming relies on and must be told when the entries are final; earlier majors need nothing.
inline void finalize_tuple_desc(TupleDesc desc) {
#if PG_VERSION_NUM >= 190000
    TupleDescFinalize(desc);
#else
    (void)desc;
#endif
}

// The query jumble a post_parse_analyze_hook receives (read-only from 19 on).
#if PG_VERSION_NUM >= 190000
using PostParseJumbleState = const JumbleState*;
#else
using PostParseJumbleState = JumbleState*;
#endif

// The Vars of range table entry target_varno (at any subquery level below the top) replaced by
// the expressions of targetlist; result_relation is the query's result relation after the
// replacement (18 needs it for RETURNING OLD/NEW).
inline Node* replace_vars(Node* node, int target_varno, RangeTblEntry* target_rte, List* targetlist,
                          int result_relation, bool* outer_has_sublinks) {
#if PG_VERSION_NUM >= 180000
    return ReplaceVarsFromTargetList(node, target_varno, 0, target_rte, targetlist, result_relation,
                                     REPLACEVARS_REPORT_ERROR, 0, outer_has_sublinks);
#else
    (void)result_relation;
    return ReplaceVarsFromTargetList(node, target_varno, 0, target_rte, targetlist,
                                     REPLACEVARS_REPORT_ERROR, 0, outer_has_sublinks);
#endif
}

}  // namespace pg
