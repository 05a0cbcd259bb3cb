// See direct_position_claim.hpp.
extern "C" {
#include "postgres.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "pg/speculative_insert.hpp"
#include "pg/table_shape.hpp"
#include "store/marker_table.hpp"
#include "stream/direct_position_claim.hpp"

namespace {

// The positions' table, and whether the direct claim serves it, decided once per relcache entry:
// any change of its columns, indexes, triggers, rules, policies or constraints invalidates it.
struct PositionsTarget {
    bool found;
    Oid table;  // InvalidOid: a database not at 1.3 yet
    bool decided;
    Oid key;  // its primary key; InvalidOid: only the statements serve the table
};
PositionsTarget cached_target = {false, InvalidOid, false, InvalidOid};
bool invalidation_registered = false;

void forget_target(Datum, Oid relid) {
    if (relid == InvalidOid || relid == cached_target.table) cached_target = {};
}

// The columns as the extension creates them, in this order.
constexpr int position_columns = 4;
const char* const column_names[position_columns] = {"consumer_id", "stream", "position",
                                                    "updated_at"};
const Oid column_types[position_columns] = {INT2OID, TEXTOID, INT8OID, TIMESTAMPTZOID};
constexpr AttrNumber stream_column = 2;
constexpr AttrNumber position_column = 3;
// The arbiter of ON CONFLICT (consumer_id, stream).
const AttrNumber key_columns[2] = {1, stream_column};

Oid positions_table() {
    if (cached_target.found) return cached_target.table;
    if (!invalidation_registered) {
        CacheRegisterRelcacheCallback(forget_target, (Datum)0);
        invalidation_registered = true;
    }
    RangeVar* name = makeRangeVar(pstrdup("inbox"), pstrdup("stream_positions"), -1);
    cached_target = {true, RangeVarGetRelidExtended(name, NoLock, RVR_MISSING_OK, nullptr, nullptr),
                     false, InvalidOid};
    return cached_target.table;
}

// The statements compare streams byte by byte (COLLATE "C"), as the key does while its column
// keeps the collation it was created with.
Oid key_for(Relation table) {
    if (cached_target.decided) return cached_target.key;
    TupleDesc columns = RelationGetDescr(table);
    bool plain = pg::plain_table(table) &&
                 pg::columns_as_created(columns, column_names, column_types, position_columns) &&
                 TupleDescAttr(columns, stream_column - 1)->attcollation == C_COLLATION_OID;
    cached_target.key = plain ? pg::sole_unique_key(table, key_columns, 2) : InvalidOid;
    cached_target.decided = true;
    return cached_target.key;
}

// The stream's row at `position`, moved now; every NOT NULL column has its value, so
// ExecConstraints has nothing to check.
void fill_row(TupleTableSlot* row, int16 consumer_id, text* stream, int64 position) {
    ExecClearTuple(row);
    row->tts_values[0] = Int16GetDatum(consumer_id);
    row->tts_values[1] = PointerGetDatum(stream);
    row->tts_values[2] = Int64GetDatum(position);
    row->tts_values[3] = TimestampTzGetDatum(GetCurrentTimestamp());
    for (int i = 0; i < position_columns; i++) row->tts_isnull[i] = false;
    ExecStoreVirtualTuple(row);
}

// The row at tid locked as ON CONFLICT DO UPDATE locks it for an update of no key column,
// waiting for a claim in flight; false when that claim moved or retired the stream, under READ
// COMMITTED: the caller looks again.
bool lock_row(Relation table, ItemPointer tid, EState* estate, TupleTableSlot* locked) {
    TM_FailureData failure;
    TM_Result result =
        table_tuple_lock(table, tid, estate->es_snapshot, locked, estate->es_output_cid,
                         LockTupleNoKeyExclusive, LockWaitBlock, 0, &failure);
    if (result == TM_Ok) return true;
    if (result != TM_Updated && result != TM_Deleted)
        elog(ERROR, "unexpected result %d locking the position of a stream", (int)result);
    if (IsolationUsesXactSnapshot())
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to concurrent %s",
                               result == TM_Updated ? "update" : "delete")));
    ExecClearTuple(locked);
    return false;
}

// The locked row at tid moved to the row's values, as ExecUpdate does it: a HOT update when the
// page has room (no indexed column changes), else with the new version's index entries.
void move_row(ResultRelInfo* target, EState* estate, ItemPointer tid, TupleTableSlot* row) {
    TM_FailureData failure;
    pg::UpdatedIndexes indexes = pg::UpdatedIndexes::none;
    TM_Result result = pg::update_row(target->ri_RelationDesc, tid, row, estate->es_output_cid,
                                      estate->es_snapshot, &failure, &indexes);
    if (result != TM_Ok)
        elog(ERROR, "unexpected result %d moving the locked position of a stream", (int)result);
    pg::insert_updated_index_tuples(target, row, estate, indexes);
}

inbox::PositionRun claim_in_table(Relation table, Oid key, const Consumer& consumer, text* stream,
                                  const int64* ascending, int count, bool contiguous) {
    EState* estate = CreateExecutorState();
    estate->es_output_cid = GetCurrentCommandId(true);
    estate->es_snapshot = GetActiveSnapshot();
    ResultRelInfo* target = makeNode(ResultRelInfo);
    // No range table: nothing below reads it (it serves permissions, triggers and the messages
    // of CHECK constraints, none of which applies here).
    InitResultRelInfo(target, table, 0, nullptr, 0);
    ExecOpenIndices(target, true);
    TupleTableSlot* row = ExecInitExtraTupleSlot(estate, RelationGetDescr(table), &TTSOpsVirtual);
    TupleTableSlot* locked = table_slot_create(table, &estate->es_tupleTable);
    List* arbiters = list_make1_oid(key);
    inbox::PositionRun run = {0, 0};
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        // The key (the position is not read yet) for the conflict check.
        fill_row(row, consumer.id, stream, 0);
        ItemPointerData existing;
        if (pg::check_index_constraints(target, row, estate, &existing, arbiters)) {
            run = inbox::classify_positions({false, 0}, ascending, count, contiguous);
            if (run.end_next == run.first_next) break;
            fill_row(row, consumer.id, stream, ascending[run.end_next - 1]);
            // No index is deferrable (pg::sole_unique_key): nothing to recheck at commit.
            if (pg::insert_speculatively(target, estate, row, arbiters)) break;
            // Another transaction created the stream meanwhile: its row decides.
            continue;
        }
        if (!lock_row(table, &existing, estate, locked)) continue;
        pg::refuse_row_invisible_to_transaction(table, estate, &existing);
        bool isnull = false;
        int64 committed = DatumGetInt64(slot_getattr(locked, position_column, &isnull));
        run = inbox::classify_positions({true, committed}, ascending, count, contiguous);
        if (run.end_next == run.first_next) break;
        fill_row(row, consumer.id, stream, ascending[run.end_next - 1]);
        move_row(target, estate, &existing, row);
        break;
    }
    ExecResetTupleTable(estate->es_tupleTable, false);
    ExecCloseIndices(target);
    FreeExecutorState(estate);
    return run;
}

// The privileges the statements need on the table, checked on every claim as the executor
// checks them: grants and role memberships change without a relcache invalidation.
bool owner_may_write(Oid table) {
    constexpr AclMode needed = ACL_SELECT | ACL_INSERT | ACL_UPDATE;
    return pg_class_aclmask(table, GetUserId(), needed, ACLMASK_ALL) == needed;
}

}  // namespace

bool claim_positions_directly(const Consumer& consumer, text* stream, const int64* ascending,
                              int count, bool contiguous, inbox::PositionRun* run) {
    // A read-only transaction or parallel mode makes the statements fail with their own
    // messages; a permission hook (sepgsql, pgaudit) must see them.
    if (XactReadOnly || IsInParallelMode() || IsolationIsSerializable() ||
        ExecutorCheckPerms_hook != nullptr)
        return false;
    Oid found = positions_table();
    if (!OidIsValid(found)) return false;
    Relation table = try_table_open(found, RowExclusiveLock);
    if (table == nullptr) return false;
    // Decided with the table locked, which brings the invalidations of what committed meanwhile
    // (the extension dropped and made anew, the store distributed by Citus).
    const MarkerStore* store = marker_store();
    Oid key = store->distribution == StoreDistribution::local &&
                      RelationGetRelid(table) == positions_table()
                  ? key_for(table)
                  : InvalidOid;
    bool direct = false;
    if (OidIsValid(key)) {
        CallerIdentity caller = become_store_owner(store);
        direct = owner_may_write(RelationGetRelid(table));
        if (direct)
            *run = claim_in_table(table, key, consumer, stream, ascending, count, contiguous);
        return_to_caller(caller);
    }
    table_close(table, NoLock);
    // As after the statements: what follows in the transaction sees the row.
    if (direct) CommandCounterIncrement();
    return direct;
}
