// A row that another transaction updated or deleted after this one's snapshot (TM_Updated,
// TM_Deleted): under REPEATABLE READ or SERIALIZABLE a serialization failure (40001), worded as
// the executor words it; in READ COMMITTED nothing, and the caller goes on.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/tableam.h"
#include "access/xact.h"
}

namespace pg {

inline void refuse_change_after_snapshot(TM_Result result) {
    if (IsolationUsesXactSnapshot())
        ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
                        errmsg("could not serialize access due to concurrent %s",
                               result == TM_Updated ? "update" : "delete")));
}

}  // namespace pg
