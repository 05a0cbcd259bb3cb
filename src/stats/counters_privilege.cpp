// See counters_privilege.hpp.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
}

#include "pg/compat.hpp"
#include "stats/counters_privilege.hpp"

void check_counters_privilege() {
    List* name = list_make2(makeString(pstrdup("inbox")), makeString(pstrdup("stats_counters")));
    Oid function = LookupFuncName(name, 0, nullptr, false);
    if (pg::object_privilege(ProcedureRelationId, function, GetUserId(), ACL_EXECUTE) !=
        ACLCHECK_OK)
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to read the inbox counters"),
                        errdetail("Reading them takes EXECUTE on inbox.stats_counters()."),
                        errhint("GRANT EXECUTE ON FUNCTION inbox.stats_counters() to the role, or "
                                "SELECT inbox.grant_access(role, 'monitor').")));
}
