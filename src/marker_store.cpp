// Reaches inbox.messages only through SPI and kept plans, so that a partitioned or distributed
// (Citus) marker table works the same as a local one.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "claim_stats.hpp"
#include "marker_store.hpp"

namespace {

// The marker table and its owner, looked up once and dropped from this cache by any relcache
// invalidation (ALTER TABLE ... OWNER, DROP EXTENSION), so that a stale owner is never used.
struct MarkerTable {
    Oid relid;
    Oid owner;
};
MarkerTable marker_table = {InvalidOid, InvalidOid};
bool invalidation_registered = false;

void forget_marker_table(Datum, Oid relid) {
    if (relid == InvalidOid || relid == marker_table.relid) marker_table.relid = InvalidOid;
}

Oid marker_table_owner() {
    if (OidIsValid(marker_table.relid)) return marker_table.owner;

    if (!invalidation_registered) {
        CacheRegisterRelcacheCallback(forget_marker_table, (Datum)0);
        invalidation_registered = true;
    }
    Oid relid = get_relname_relid("messages", get_namespace_oid("inbox", false));
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
    if (!HeapTupleIsValid(tuple))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table inbox.messages is missing"),
                        errhint("Recreate the extension: DROP EXTENSION inbox; CREATE EXTENSION "
                                "inbox;")));
    marker_table.owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    marker_table.relid = relid;
    ReleaseSysCache(tuple);
    return marker_table.owner;
}

// ON CONFLICT DO NOTHING lets the primary key arbitrate: a concurrent uncommitted copy makes the
// insert wait for its transaction; under REPEATABLE READ a conflict with a row the snapshot
// cannot see is a serialization failure, never a wrong answer.
MarkerStatement insert_marker = {
    "INSERT INTO inbox.messages (consumer, message_id) VALUES ($1, $2) "
    "ON CONFLICT (consumer, message_id) DO NOTHING",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

MarkerStatement delete_marker = {
    "DELETE FROM inbox.messages WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\" "
    "AND message_id OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    2,
    {TEXTOID, TEXTOID},
    nullptr};

// One marker, in an SPI connection of its own.
bool execute_for_marker(MarkerStatement* statement, text* consumer, text* message_id) {
    if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    Datum values[2] = {PointerGetDatum(consumer), PointerGetDatum(message_id)};
    execute_as_marker_owner(statement, values);
    bool changed = SPI_processed > 0;
    SPI_finish();
    return changed;
}

}  // namespace

// The caller's identity is back before any of its code runs again (on error, transaction abort
// restores it).
int execute_as_marker_owner(MarkerStatement* statement, Datum* values) {
    Oid owner = marker_table_owner();
    if (statement->plan == nullptr) {
        SPIPlanPtr plan = SPI_prepare(statement->sql, statement->nargs, statement->argtypes);
        if (plan == nullptr)
            elog(ERROR, "could not prepare \"%s\": %s", statement->sql,
                 SPI_result_code_string(SPI_result));
        SPI_keepplan(plan);
        statement->plan = plan;
    }
    Oid caller;
    int caller_context;
    GetUserIdAndSecContext(&caller, &caller_context);
    SetUserIdAndSecContext(
        owner, caller_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    int rc = SPI_execute_plan(statement->plan, values, nullptr, false, 0);
    SetUserIdAndSecContext(caller, caller_context);
    if (rc < 0) elog(ERROR, "\"%s\" failed: %s", statement->sql, SPI_result_code_string(rc));
    return rc;
}

bool claim_marker(text* consumer, text* message_id) {
    return count_claim(consumer, execute_for_marker(&insert_marker, consumer, message_id));
}

bool forget_marker(text* consumer, text* message_id) {
    return execute_for_marker(&delete_marker, consumer, message_id);
}

extern "C" {

PG_FUNCTION_INFO_V1(inbox_claim);
PGDLLEXPORT Datum inbox_claim(PG_FUNCTION_ARGS) {
    MarkerKey key = require_marker_key(fcinfo);
    PG_RETURN_BOOL(claim_marker(key.consumer, key.message_id));
}

PG_FUNCTION_INFO_V1(inbox_forget);
PGDLLEXPORT Datum inbox_forget(PG_FUNCTION_ARGS) {
    MarkerKey key = require_marker_key(fcinfo);
    PG_RETURN_BOOL(forget_marker(key.consumer, key.message_id));
}
}
