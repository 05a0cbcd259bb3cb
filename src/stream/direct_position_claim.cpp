// See direct_position_claim.hpp.
extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "pg/index_writer.hpp"
#include "pg/relcache_invalidation.hpp"
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
void forget_target(Oid relid) {
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
    pg::forget_on_relcache_invalidation(forget_target);
    cached_target = {true, find_inbox_relation("stream_positions", NoLock), false, InvalidOid};
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

// The stream's row as ON CONFLICT finds a conflict (PostgreSQL's
// check_exclusion_or_unique_constraint): through the key, with a dirty snapshot that also sees
// rows being written, waiting for their writer and then looking again. False when the stream has
// no row.
bool find_row(Relation table, Relation key, int16 consumer_id, text* stream,
              TupleTableSlot* found) {
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_INT2EQ, Int16GetDatum(consumer_id));
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(stream));
    keys[1].sk_collation = C_COLLATION_OID;
    for (;;) {
        SnapshotData dirty;
        InitDirtySnapshot(dirty);
        IndexScanDesc scan = pg::begin_index_scan(table, key, &dirty, 2);
        index_rescan(scan, keys, 2, nullptr, 0);
        bool exists = index_getnext_slot(scan, ForwardScanDirection, found);
        index_endscan(scan);
        if (!exists) return false;
        TransactionId writer = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
        if (!TransactionIdIsValid(writer)) return true;
        ItemPointerData tid = found->tts_tid;
        ExecClearTuple(found);
        if (dirty.speculativeToken != 0)
            SpeculativeInsertionWait(dirty.xmin, dirty.speculativeToken);
        else
            XactLockTableWait(writer, table, &tid, XLTW_InsertIndex);
    }
}

// The row at tid locked as ON CONFLICT DO UPDATE locks it for an update of no key column; false
// when a claim moved or retired the stream since it was found, under READ COMMITTED: the caller
// looks again.
bool lock_row(Relation table, ItemPointer tid, CommandId command, TupleTableSlot* locked) {
    TM_FailureData failure;
    TM_Result result = table_tuple_lock(table, tid, GetActiveSnapshot(), locked, command,
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
void move_row(Relation table, ItemPointer tid, CommandId command, TupleTableSlot* row) {
    TM_FailureData failure;
    pg::UpdatedIndexes indexes = pg::UpdatedIndexes::none;
    TM_Result result =
        pg::update_row(table, tid, row, command, GetActiveSnapshot(), true, &failure, &indexes);
    if (result != TM_Ok)
        elog(ERROR, "unexpected result %d moving the locked position of a stream", (int)result);
    if (indexes == pg::UpdatedIndexes::none) return;
    pg::IndexWriter writer = pg::open_index_writer(table, command, false);
    pg::insert_updated_index_tuples(writer.target, row, writer.estate, indexes);
    pg::close_index_writer(writer);
}

// The stream's first row, as ExecInsert inserts it for ON CONFLICT after a check that found no
// conflict: false, with nothing inserted, when another transaction inserted the stream meanwhile.
bool create_row(Relation table, Oid key, CommandId command, TupleTableSlot* row) {
    pg::IndexWriter writer = pg::open_index_writer(table, command, true);
    // No index is deferrable (pg::sole_unique_key): nothing to recheck at commit.
    bool inserted =
        pg::insert_speculatively(writer.target, writer.estate, row, list_make1_oid(key));
    pg::close_index_writer(writer);
    return inserted;
}

inbox::PositionRun claim_in_table(Relation table, Oid key, const Consumer& consumer, text* stream,
                                  const int64* ascending, int count, bool contiguous) {
    CommandId command = GetCurrentCommandId(true);
    Relation key_index = index_open(key, RowExclusiveLock);
    TupleTableSlot* found = table_slot_create(table, nullptr);
    TupleTableSlot* row = MakeSingleTupleTableSlot(RelationGetDescr(table), &TTSOpsVirtual);
    inbox::PositionRun run = {0, 0};
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (!find_row(table, key_index, consumer.id, stream, found)) {
            run = inbox::classify_positions({false, 0}, ascending, count, contiguous);
            if (run.end_next == run.first_next) break;
            fill_row(row, consumer.id, stream, ascending[run.end_next - 1]);
            if (create_row(table, key, command, row)) break;
            // Another transaction created the stream meanwhile: its row decides.
            continue;
        }
        ItemPointerData tid = found->tts_tid;
        if (!lock_row(table, &tid, command, found)) continue;
        pg::refuse_row_invisible_to_transaction(table, found);
        bool isnull = false;
        int64 committed = DatumGetInt64(slot_getattr(found, position_column, &isnull));
        run = inbox::classify_positions({true, committed}, ascending, count, contiguous);
        if (run.end_next == run.first_next) break;
        fill_row(row, consumer.id, stream, ascending[run.end_next - 1]);
        move_row(table, &tid, command, row);
        break;
    }
    ExecDropSingleTupleTableSlot(row);
    ExecDropSingleTupleTableSlot(found);
    index_close(key_index, NoLock);
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
