// See marker_insert.hpp.
extern "C" {
#include "postgres.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include "pg/compat.hpp"
#include "pg/relcache_invalidation.hpp"
#include "pg/speculative_insert.hpp"
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
void forget_target(Oid relid) {
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

// The arbiter ON CONFLICT (consumer_id, message_key) infers.
const AttrNumber key_columns[2] = {consumer_id_column, message_key_column};

// The statement does more than the direct insert on a table with triggers (they fire), rules
// (they rewrite it), row-level security (its policies check the row), CHECK constraints,
// partitions, or columns other than the marker's.
Oid arbiter_for(Relation table) {
    if (cached_target.table == RelationGetRelid(table)) return cached_target.arbiter;
    pg::forget_on_relcache_invalidation(forget_target);
    bool plain =
        pg::plain_table(table) &&
        pg::columns_as_created(RelationGetDescr(table), column_names, column_types, marker_columns);
    cached_target = {RelationGetRelid(table),
                     plain ? pg::sole_unique_key(table, key_columns, 2) : InvalidOid};
    return cached_target.arbiter;
}

// PostgreSQL's ExecInsert for ON CONFLICT DO NOTHING: a check for a conflicting key (waiting
// for an uncommitted one), then a speculative insert, until one or the other holds.
bool insert_unless_conflicting(ResultRelInfo* target, EState* estate, TupleTableSlot* row,
                               List* arbiters) {
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        ItemPointerData conflict;
        if (!pg::check_index_constraints(target, row, estate, &conflict, arbiters)) {
            pg::refuse_conflict_invisible_to_transaction(target->ri_RelationDesc, estate,
                                                         &conflict);
            return false;
        }
        // No index is deferrable (pg::sole_unique_key): nothing to recheck at commit.
        if (pg::insert_speculatively(target, estate, row, arbiters)) return true;
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
    bool inserted = insert_unless_conflicting(target, estate, row, list_make1_oid(arbiter));
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
