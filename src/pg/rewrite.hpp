// The query rewriter's helpers this extension uses, with every difference between majors.
#pragma once

extern "C" {
#include "postgres.h"
#include "rewrite/rewriteManip.h"
}

namespace pg {

// The Vars of range table entry target_varno (at any subquery level below the top) replaced by
// the expressions of targetlist; result_relation is the query's result relation after the
// replacement (PostgreSQL 18 needs it for RETURNING OLD/NEW).
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
