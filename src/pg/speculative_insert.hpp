// The executor's routines of INSERT ... ON CONFLICT (PostgreSQL's ExecInsert and
// ExecOnConflictUpdate) that a direct write into a table of the extension's shares: a row the
// transaction's snapshot may not see, and a speculative insert that a concurrent inserter of the
// same key can make withdraw. C-style: hot paths.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "storage/itemptr.h"
}

namespace pg {

// Under REPEATABLE READ or SERIALIZABLE, a serialization failure (40001) when row (a row just
// locked) was written by another transaction that the transaction's snapshot cannot see: the
// statement could not give the answer that row leads to (ExecCheckTupleVisible). Nothing under
// READ COMMITTED.
void refuse_row_invisible_to_transaction(Relation table, TupleTableSlot* row);

// The same for the conflicting row at tid (ExecCheckTIDVisible).
void refuse_conflict_invisible_to_transaction(Relation table, EState* estate, ItemPointer tid);

// One speculative insert of row, checked for conflicts before (check_index_constraints): false,
// with nothing inserted, when a concurrent inserter of the same key made it withdraw, after
// which the caller checks for the conflict again. No index may be deferrable.
bool insert_speculatively(ResultRelInfo* target, EState* estate, TupleTableSlot* row,
                          List* arbiters);

}  // namespace pg
