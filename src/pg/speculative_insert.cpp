// See speculative_insert.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"
}

#include "pg/compat.hpp"
#include "pg/speculative_insert.hpp"

namespace pg {

void refuse_row_invisible_to_transaction(Relation table, TupleTableSlot* row) {
    if (!IsolationUsesXactSnapshot()) return;
    if (table_tuple_satisfies_snapshot(table, row, GetTransactionSnapshot())) return;
    bool isnull = false;
    Datum xmin = slot_getsysattr(row, MinTransactionIdAttributeNumber, &isnull);
    if (!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin)))
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to concurrent update")));
}

void refuse_conflict_invisible_to_transaction(Relation table, EState* estate, ItemPointer tid) {
    if (!IsolationUsesXactSnapshot()) return;
    TupleTableSlot* existing = table_slot_create(table, &estate->es_tupleTable);
    if (!table_tuple_fetch_row_version(table, tid, SnapshotAny, existing))
        elog(ERROR, "failed to fetch the conflicting row");
    refuse_row_invisible_to_transaction(table, existing);
    ExecClearTuple(existing);
}

bool insert_speculatively(ResultRelInfo* target, EState* estate, TupleTableSlot* row,
                          List* arbiters) {
    Relation table = target->ri_RelationDesc;
    uint32 token = SpeculativeInsertionLockAcquire(GetCurrentTransactionId());
    table_tuple_insert_speculative(table, row, estate->es_output_cid, 0, nullptr, token);
    bool conflicted = false;
    insert_speculative_index_tuples(target, row, estate, arbiters, &conflicted);
    table_tuple_complete_speculative(table, row, token, !conflicted);
    SpeculativeInsertionLockRelease(GetCurrentTransactionId());
    return !conflicted;
}

}  // namespace pg
