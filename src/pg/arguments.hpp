// Arguments of SQL-callable functions: none of ours is STRICT, so a NULL is refused explicitly
// and never comes back as a NULL answer a caller could read as "skip".
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

namespace pg {

// SQLSTATE 22004 "<name> must not be NULL" (with the hint, if any) when argument `argno` is NULL.
inline void require_argument(FunctionCallInfo fcinfo, int argno, const char* name,
                             const char* hint = nullptr) {
    if (!PG_ARGISNULL(argno)) return;
    ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", name),
                    hint != nullptr ? errhint("%s", hint) : 0));
}

}  // namespace pg
