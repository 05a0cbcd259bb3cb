// See marker_table.hpp: the store of the current database, found once per backend, and the
// statements on it, run as its owner.
extern "C" {
#include "postgres.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "pg/relcache_invalidation.hpp"
#include "pg/spi.hpp"
#include "store/marker_table.hpp"

namespace {

MarkerStore cached_store = {.layout = MarkerLayout::compact,
                            .markers = InvalidOid,
                            .details = InvalidOid,
                            .registry = InvalidOid,
                            .owner_column = OwnerColumn::none,
                            .owner = InvalidOid,
                            .distribution = StoreDistribution::local};
bool store_cached = false;
// Citus's catalog of this node's group, when Citus is installed: its invalidation says the node
// joined or left a cluster.
Oid cached_local_group_table = InvalidOid;

void forget_store(Oid relid) {
    if (relid == InvalidOid || relid == cached_store.markers || relid == cached_store.details ||
        relid == cached_store.registry ||
        (OidIsValid(cached_local_group_table) && relid == cached_local_group_table))
        store_cached = false;
}

CallerIdentity become_role(Oid role) {
    CallerIdentity caller;
    GetUserIdAndSecContext(&caller.user, &caller.security_context);
    SetUserIdAndSecContext(role, caller.security_context | SECURITY_LOCAL_USERID_CHANGE |
                                     SECURITY_RESTRICTED_OPERATION);
    return caller;
}

[[noreturn]] void report_missing_store() {
    ereport(ERROR,
            (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("the marker tables of inbox are missing"),
             errhint("Recreate the extension: DROP EXTENSION inbox; CREATE EXTENSION inbox;")));
}

}  // namespace

Oid find_inbox_relation(const char* name, LOCKMODE mode) {
    RangeVar* relation = makeRangeVar(pstrdup("inbox"), pstrdup(name), -1);
    return RangeVarGetRelidExtended(relation, mode, RVR_MISSING_OK, nullptr, nullptr);
}

const MarkerStore* marker_store() {
    if (store_cached) return &cached_store;
    pg::forget_on_relcache_invalidation(forget_store);
    MarkerStore store = {.layout = MarkerLayout::compact,
                         .markers = find_inbox_relation("markers", NoLock),
                         .details = find_inbox_relation("marker_details", NoLock),
                         .registry = find_inbox_relation("consumer_registry", NoLock),
                         .owner_column = OwnerColumn::none,
                         .owner = InvalidOid,
                         .distribution = StoreDistribution::local};
    if (!OidIsValid(store.markers)) {
        // 1.0's inbox.messages is a table; 1.1's is a view.
        Oid messages = find_inbox_relation("messages", NoLock);
        if (!OidIsValid(messages) || get_rel_relkind(messages) == RELKIND_VIEW)
            report_missing_store();
        store = {.layout = MarkerLayout::version_1_0,
                 .markers = messages,
                 .details = InvalidOid,
                 .registry = InvalidOid,
                 .owner_column = OwnerColumn::none,
                 .owner = InvalidOid,
                 .distribution = StoreDistribution::local};
    } else if (!OidIsValid(store.registry)) {
        report_missing_store();
    } else {
        AttrNumber owner = get_attnum(store.registry, "owner");
        if (owner != InvalidAttrNumber)
            store.owner_column = get_atttype(store.registry, owner) == NAMEOID
                                     ? OwnerColumn::role_name
                                     : OwnerColumn::role_oid;
    }
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(store.markers));
    if (!HeapTupleIsValid(tuple)) report_missing_store();
    store.owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    store.distribution = read_store_distribution(store.markers, store.details, store.registry);
    cached_local_group_table = citus_local_group_table();
    cached_store = store;
    store_cached = true;
    return &cached_store;
}

bool lock_store_for_purge() {
    if (OidIsValid(find_inbox_relation("consumer_registry", AccessShareLock)))
        return OidIsValid(find_inbox_relation("markers", RowExclusiveLock)) &&
               OidIsValid(find_inbox_relation("marker_details", RowExclusiveLock));
    Oid messages = find_inbox_relation("messages", NoLock);
    if (!OidIsValid(messages) || get_rel_relkind(messages) == RELKIND_VIEW) return false;
    return OidIsValid(find_inbox_relation("messages", RowExclusiveLock));
}

bool lock_outbox_for_purge() {
    return OidIsValid(find_inbox_relation("outbox_delivered", RowExclusiveLock));
}

CallerIdentity become_store_owner(const MarkerStore* store) {
    return become_role(store->owner);
}

void return_to_caller(CallerIdentity caller) {
    SetUserIdAndSecContext(caller.user, caller.security_context);
}

SPIPlanPtr prepared_plan(MarkerStatement* statement) {
    if (statement->plan == nullptr)
        statement->plan =
            pg::prepare_kept_plan(statement->sql, statement->nargs, statement->argtypes);
    return statement->plan;
}

namespace {

using PlanExecutor = int (*)(SPIPlanPtr, const char*, const Datum*, const char*);

int run_as(Oid role, PlanExecutor execute, MarkerStatement* statement, const Datum* values,
           const char* nulls) {
    SPIPlanPtr plan = prepared_plan(statement);
    CallerIdentity caller = become_role(role);
    int rc = execute(plan, statement->sql, values, nulls);
    return_to_caller(caller);
    return rc;
}

}  // namespace

int execute_as_store_owner(MarkerStatement* statement, const Datum* values, const char* nulls) {
    return run_as(marker_store()->owner, pg::execute_plan, statement, values, nulls);
}

int read_latest_as_store_owner(MarkerStatement* statement, const Datum* values) {
    return run_as(marker_store()->owner, pg::execute_plan_latest, statement, values, nullptr);
}

Oid stream_positions_owner() {
    Oid table = find_inbox_relation("stream_positions", NoLock);
    if (!OidIsValid(table)) return InvalidOid;
    HeapTuple tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
    if (!HeapTupleIsValid(tuple)) return InvalidOid;
    Oid owner = ((Form_pg_class)GETSTRUCT(tuple))->relowner;
    ReleaseSysCache(tuple);
    return owner;
}

int read_latest_as(Oid owner, MarkerStatement* statement, const Datum* values) {
    return run_as(owner, pg::execute_plan_latest, statement, values, nullptr);
}
