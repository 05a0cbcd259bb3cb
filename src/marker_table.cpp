extern "C" {
#include "postgres.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

#include "marker_table.hpp"
#include "pg/spi.hpp"

namespace {

// The marker table's owner, looked up once and dropped by any relcache invalidation of the
// table (ALTER TABLE ... OWNER, DROP EXTENSION), so that a stale owner is never used.
struct CachedOwner {
    Oid relid;  // InvalidOid: not cached
    Oid owner;
};
CachedOwner cached_owner = {InvalidOid, InvalidOid};
bool invalidation_registered = false;

void forget_owner(Datum, Oid relid) {
    if (relid == InvalidOid || relid == cached_owner.relid) cached_owner.relid = InvalidOid;
}

Oid marker_table_owner() {
    if (OidIsValid(cached_owner.relid)) return cached_owner.owner;
    if (!invalidation_registered) {
        CacheRegisterRelcacheCallback(forget_owner, (Datum)0);
        invalidation_registered = true;
    }
    Oid relid = find_marker_table(NoLock);
    HeapTuple tuple =
        OidIsValid(relid) ? SearchSysCache1(RELOID, ObjectIdGetDatum(relid)) : nullptr;
    if (!HeapTupleIsValid(tuple))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table inbox.messages is missing"),
                        errhint("Recreate the extension: DROP EXTENSION inbox; CREATE EXTENSION "
                                "inbox;")));
    cached_owner.owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    cached_owner.relid = relid;
    ReleaseSysCache(tuple);
    return cached_owner.owner;
}

}  // namespace

Oid find_marker_table(LOCKMODE mode) {
    RangeVar* table = makeRangeVar(pstrdup("inbox"), pstrdup("messages"), -1);
    return RangeVarGetRelidExtended(table, mode, RVR_MISSING_OK, nullptr, nullptr);
}

int execute_as_marker_owner(MarkerStatement* statement, const Datum* values) {
    Oid owner = marker_table_owner();
    if (statement->plan == nullptr)
        statement->plan =
            pg::prepare_kept_plan(statement->sql, statement->nargs, statement->argtypes);
    Oid caller;
    int caller_context;
    GetUserIdAndSecContext(&caller, &caller_context);
    SetUserIdAndSecContext(
        owner, caller_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    int rc = pg::execute_plan(statement->plan, statement->sql, values, nullptr);
    SetUserIdAndSecContext(caller, caller_context);
    return rc;
}
