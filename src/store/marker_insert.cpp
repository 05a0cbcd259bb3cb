// See marker_insert.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
}

#include "pg/compat.hpp"
#include "pg/table_shape.hpp"
#include "store/marker_insert.hpp"
#include "store/marker_table.hpp"

namespace {

// Whether the markers' table is one the direct insert serves, decided once per relcache entry:
// any change of its columns, indexes, triggers, rules, policies or constraints invalidates it.
struct InsertTarget {
    Oid table;    // InvalidOid: not decided yet
    Oid arbiter;  // its primary key; InvalidOid: only the statement serves the table
};
InsertTarget cached_target = {InvalidOid, InvalidOid};
bool invalidation_registered = false;

void forget_target(Datum, Oid relid) {
    if (relid == InvalidOid || relid == cached_target.table) cached_target.table = InvalidOid;
}

// The columns as the extension creates them, in this order: each value goes to its column
// with no conversion, default, identity or generation expression.
constexpr int marker_columns = 4;
const char* const column_names[marker_columns] = {"time_bucket", "consumer_id", "time_offset",
                                                  "message_key"};
const Oid column_types[marker_columns] = {INT4OID, INT2OID, CHAROID, BYTEAOID};
constexpr AttrNumber consumer_id_column = 2;
constexpr AttrNumber message_key_column = 4;

// The arbiter ON CONFLICT (consumer_id, message_key) infers when the primary key is the only
// unique or exclusion index; InvalidOid when another one could be an arbiter too, or when the
// key is not what the statement expects (it then reports what is wrong).
Oid sole_arbiter(Relation table) {
    Oid primary_key = pg::primary_key_index(table);
    if (!OidIsValid(primary_key)) return InvalidOid;
    List* indexes = RelationGetIndexList(table);
    bool sole = true;
    ListCell* cell;
    foreach (cell, indexes) {
        HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(cell)));
        if (!HeapTupleIsValid(tuple))
            elog(ERROR, "cache lookup failed for index %u", lfirst_oid(cell));
        auto* index = (Form_pg_index)GETSTRUCT(tuple);
        if (index->indexrelid == primary_key)
            sole = sole && index->indisvalid && index->indimmediate && index->indnkeyatts == 2 &&
                   index->indkey.values[0] == consumer_id_column &&
                   index->indkey.values[1] == message_key_column;
        else
            sole = sole && !index->indisunique && !index->indisexclusion;
        ReleaseSysCache(tuple);
    }
    list_free(indexes);
    return sole ? primary_key : InvalidOid;
}

// The statement does more than the direct insert on a table with triggers (they fire), rules
// (they rewrite it), row-level security (its policies check the row), CHECK constraints,
// partitions, or columns other than the marker's.
Oid arbiter_for(Relation table) {
    if (!invalidation_registered) {
        CacheRegisterRelcacheCallback(forget_target, (Datum)0);
        invalidation_registered = true;
    }
    if (cached_target.table == RelationGetRelid(table)) return cached_target.arbiter;
    Form_pg_class form = table->rd_rel;
    bool plain =
        form->relkind == RELKIND_RELATION && !form->relispartition && !form->relrowsecurity &&
        table->trigdesc == nullptr && table->rd_rules == nullptr &&
        pg::columns_as_created(RelationGetDescr(table), column_names, column_types, marker_columns);
    cached_target = {RelationGetRelid(table), plain ? sole_arbiter(table) : InvalidOid};
    return cached_target.arbiter;
}

// What ON CONFLICT DO NOTHING does with a conflict under REPEATABLE READ or SERIALIZABLE
// (PostgreSQL's ExecCheckTIDVisible): a row the transaction's snapshot cannot see, inserted by
// another transaction, makes "not inserted" an answer the snapshot could not give.
void refuse_invisible_conflict(Relation table, EState* estate, ItemPointer conflict) {
    if (!IsolationUsesXactSnapshot()) return;
    TupleTableSlot* existing = table_slot_create(table, &estate->es_tupleTable);
    if (!table_tuple_fetch_row_version(table, conflict, SnapshotAny, existing))
        elog(ERROR, "failed to fetch the conflicting marker");
    if (!table_tuple_satisfies_snapshot(table, existing, GetTransactionSnapshot())) {
        bool isnull = false;
        Datum xmin = slot_getsysattr(existing, MinTransactionIdAttributeNumber, &isnull);
        if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
            ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                            errmsg("could not serialize access due to concurrent update")));
    }
    ExecClearTuple(existing);
}

// PostgreSQL's ExecInsert for ON CONFLICT DO NOTHING: a check for a conflicting key (waiting
// for an uncommitted one), then a speculative insert that a concurrent inserter of the same key
// can make withdraw, in which case all starts again.
bool insert_speculatively(ResultRelInfo* target, EState* estate, TupleTableSlot* row,
                          List* arbiters) {
    Relation table = target->ri_RelationDesc;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        ItemPointerData conflict;
        if (!pg::check_index_constraints(target, row, estate, &conflict, arbiters)) {
            refuse_invisible_conflict(table, estate, &conflict);
            return false;
        }
        uint32 token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
        table_tuple_insert_speculative(table, row, estate->es_output_cid, 0, nullptr, token);
        bool conflicted = false;
        // No index is deferrable (sole_arbiter): nothing to recheck at commit.
        pg::insert_speculative_index_tuples(target, row, estate, arbiters, &conflicted);
        table_tuple_complete_speculative(table, row, token, !conflicted);
        SpeculativeInsertionLockRelease(GetCurrentTransactionId());
        if (!conflicted) return true;
    }
}

bool insert_into(Relation table, Oid arbiter, const Datum values[marker_columns]) {
    EState* estate = CreateExecutorState();
    estate->es_output_cid = GetCurrentCommandId(true);
    // The statement's snapshot, as the executor sets it: the conflict check of PostgreSQL 19 reads
    // the conflicting row with it.
    estate->es_snapshot = GetActiveSnapshot();
    ResultRelInfo* target = makeNode(ResultRelInfo);
    // No range table: nothing below reads it (it serves permissions, triggers and the messages
    // of CHECK constraints, none of which applies here).
    InitResultRelInfo(target, table, 0, nullptr, 0);
    ExecOpenIndices(target, true);
    TupleTableSlot* row = ExecInitExtraTupleSlot(estate, RelationGetDescr(table), &TTSOpsVirtual);
    // Every value is given, so the NOT NULL constraints hold: ExecConstraints has nothing to do.
    for (int i = 0; i < marker_columns; i++) {
        row->tts_values[i] = values[i];
        row->tts_isnull[i] = false;
    }
    ExecStoreVirtualTuple(row);
    bool inserted = insert_speculatively(target, estate, row, list_make1_oid(arbiter));
    ExecResetTupleTable(estate->es_tupleTable, false);
    ExecCloseIndices(target);
    FreeExecutorState(estate);
    return inserted;
}

}  // namespace

DirectInsert insert_marker_directly(const Datum values[marker_columns]) {
    // A read-only transaction or parallel mode makes the statement fail with its own message; a
    // permission hook (sepgsql, pgaudit) must see the statement.
    if (XactReadOnly || IsInParallelMode() || ExecutorCheckPerms_hook != nullptr)
        return DirectInsert::unsupported;
    // The store is read again once its table is locked, since the lock brings the invalidations of
    // what committed while this call waited: the statement serves a store that Citus distributed
    // meanwhile (the table here is only its shell, its rows are on the workers; Citus's TRUNCATE
    // trigger on the shell would send it there too) or that the extension dropped and made anew.
    Relation table = try_table_open(marker_store()->markers, RowExclusiveLock);
    if (table == nullptr) return DirectInsert::unsupported;
    const MarkerStore* store = marker_store();
    Oid arbiter =
        store->distribution == StoreDistribution::local && RelationGetRelid(table) == store->markers
            ? arbiter_for(table)
            : InvalidOid;
    DirectInsert outcome = DirectInsert::unsupported;
    if (OidIsValid(arbiter)) {
        CallerIdentity caller = become_store_owner(store);
        // The statement's permission check, made on every insert as the executor makes it:
        // grants and role memberships change without a relcache invalidation.
        if (pg_class_aclcheck(RelationGetRelid(table), GetUserId(), ACL_INSERT) == ACLCHECK_OK)
            outcome = insert_into(table, arbiter, values) ? DirectInsert::inserted
                                                          : DirectInsert::conflicted;
        return_to_caller(caller);
    }
    table_close(table, NoLock);
    // As after the statement: what follows in the transaction sees the marker.
    if (outcome != DirectInsert::unsupported) CommandCounterIncrement();
    return outcome;
}
