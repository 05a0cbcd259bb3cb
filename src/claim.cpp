// The hot path: inbox.claim, inbox.apply and inbox.forget, with the validation of their keys
// and the cache of apply's handler. C-style: these run inside PostgreSQL's error handling (SPI,
// executor, catalog lookups) on every delivery.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "access/xact.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

#include "claim.hpp"
#include "consumer_registry.hpp"
#include "marker_table.hpp"
#include "marker_time.hpp"
#include "message_key.hpp"
#include "pg/arguments.hpp"
#include "pg/spi.hpp"
#include "stats_pending.hpp"

// ---- keys ----------------------------------------------------------------------------------

namespace {

// Argument `argno` as text, or the contract's error for a NULL, empty or over-long key. `what`
// names the argument in the message ("consumer", "message_id").
text* require_key_part(FunctionCallInfo fcinfo, int argno, const char* what,
                       std::size_t max_bytes) {
    pg::require_argument(fcinfo, argno, what,
                         "Every message needs a consumer name and a message id.");
    text* key = PG_GETARG_TEXT_PP(argno);
    std::size_t length = VARSIZE_ANY_EXHDR(key);
    switch (inbox::check_key_length(length, max_bytes)) {
        case inbox::KeyProblem::empty:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s must not be empty", what)));
            break;
        case inbox::KeyProblem::too_long:
            ereport(ERROR,
                    (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                     errmsg("%s is %zu bytes long, the limit is %zu", what, length, max_bytes),
                     errhint("Use a shorter identifier, or a hash of it.")));
            break;
        case inbox::KeyProblem::none:
            break;
    }
    return key;
}

}  // namespace

text* require_consumer_key(FunctionCallInfo fcinfo, int argno) {
    return require_key_part(fcinfo, argno, "consumer", inbox::max_consumer_bytes);
}

text* require_message_id(FunctionCallInfo fcinfo, int argno) {
    return require_key_part(fcinfo, argno, "message_id", inbox::max_message_id_bytes);
}

namespace {

// ---- markers -------------------------------------------------------------------------------

struct MarkerKey {
    text* consumer;
    text* message_id;
};

// Both keys of a marker-taking function, arguments 0 and 1.
MarkerKey require_marker_key(FunctionCallInfo fcinfo) {
    return MarkerKey{.consumer = require_consumer_key(fcinfo, 0),
                     .message_id = require_message_id(fcinfo, 1)};
}

// A message id in its stored form (message_key.hpp), as a bytea on the stack.
struct StoredKey {
    alignas(int32) char bytes[VARHDRSZ + inbox::max_stored_key_bytes];
    bytea* datum() { return reinterpret_cast<bytea*>(bytes); }
};

void store_message_id(text* message_id, StoredKey* stored) {
    std::size_t length =
        inbox::encode_message_id(VARDATA_ANY(message_id), VARSIZE_ANY_EXHDR(message_id),
                                 reinterpret_cast<std::uint8_t*>(VARDATA(stored->datum())));
    SET_VARSIZE(stored->datum(), VARHDRSZ + length);
}

// ON CONFLICT DO NOTHING lets the primary key arbitrate: a concurrent uncommitted copy makes the
// insert wait for its transaction; under REPEATABLE READ a conflict with a row the snapshot
// cannot see is a serialization failure, never a wrong answer. The time is a parameter, not a
// column default: nothing is evaluated per insert.
MarkerStatement insert_marker = {
    .sql =
        "INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (consumer_id, message_key) DO NOTHING",
    .nargs = 4,
    .argtypes = {INT4OID, INT2OID, CHAROID, BYTEAOID},
    .plan = nullptr};

MarkerStatement delete_marker = {
    .sql =
        "DELETE FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND message_key OPERATOR(pg_catalog.=) $2",
    .nargs = 2,
    .argtypes = {INT2OID, BYTEAOID},
    .plan = nullptr};

// The same in a database still at 1.0.
MarkerStatement insert_marker_1_0 = {
    .sql =
        "INSERT INTO inbox.messages (consumer, message_id) VALUES ($1, $2) "
        "ON CONFLICT (consumer, message_id) DO NOTHING",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

MarkerStatement delete_marker_1_0 = {
    .sql =
        "DELETE FROM inbox.messages WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE "
        "pg_catalog.\"C\" AND message_id OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

enum class MarkerChange { insert, remove };

// Inserts or deletes one marker, in the caller's SPI connection; true when a row changed.
bool change_compact_marker(MarkerChange change, const MarkerKey& key) {
    bool insert = change == MarkerChange::insert;
    int16 consumer = 0;
    if (!consumer_id(key.consumer, insert, &consumer)) return false;  // so no marker either
    StoredKey stored;
    store_message_id(key.message_id, &stored);
    if (insert) {
        inbox::MarkerTime time = inbox::marker_time(GetCurrentTransactionStartTimestamp());
        Datum values[4] = {Int32GetDatum(time.bucket), Int16GetDatum(consumer),
                           CharGetDatum(static_cast<char>(time.offset)),
                           PointerGetDatum(stored.datum())};
        execute_as_store_owner(&insert_marker, values);
    } else {
        Datum values[2] = {Int16GetDatum(consumer), PointerGetDatum(stored.datum())};
        execute_as_store_owner(&delete_marker, values);
    }
    return SPI_processed > 0;
}

bool change_marker_1_0(MarkerChange change, const MarkerKey& key) {
    Datum values[2] = {PointerGetDatum(key.consumer), PointerGetDatum(key.message_id)};
    execute_as_store_owner(change == MarkerChange::insert ? &insert_marker_1_0 : &delete_marker_1_0,
                           values);
    return SPI_processed > 0;
}

// The store to write. A database at 1.0 may be updated to 1.1 while this call waits for the
// update's lock: the lock that the statement takes anyway is taken first, so that the update's
// invalidations arrive before the layout is chosen, and the call goes on with the new store.
const MarkerStore* store_for_change() {
    const MarkerStore* store = marker_store();
    if (store->layout != MarkerLayout::version_1_0) return store;
    LockRelationOid(store->markers, RowExclusiveLock);
    return marker_store();
}

// One marker, in an SPI connection of its own.
bool change_marker(MarkerChange change, const MarkerKey& key) {
    pg::spi_connect();
    bool changed = store_for_change()->layout == MarkerLayout::compact
                       ? change_compact_marker(change, key)
                       : change_marker_1_0(change, key);
    SPI_finish();
    return changed;
}

// Inserts the marker in the caller's transaction. True: first delivery, do the work. False: a
// committed marker exists. Waits for a concurrent, uncommitted copy to commit or roll back.
bool claim_marker(const MarkerKey& key) {
    return count_claim(key.consumer, change_marker(MarkerChange::insert, key));
}

// ---- apply's handler -----------------------------------------------------------------------

// The handler as resolved for one call site (kept in fn_extra), so that a loop delivering
// thousands of messages looks the function up once, as the executor does for a direct call.
// It is trusted only while it was resolved for this very function, by this user, and no
// function has changed since (a DROP, CREATE OR REPLACE or REVOKE between two calls).
struct Handler {
    bool resolved;
    Oid fn;
    Oid checked_for;  // the user whose EXECUTE privilege was checked
    uint64 functions_version;
    bool takes_payload;
    bool strict;
    FmgrInfo call;
};

// Bumped by every change to pg_proc this backend hears of.
uint64 functions_version = 0;
bool function_callback_registered = false;

void note_function_change(Datum, int, uint32) {
    functions_version++;
}

[[noreturn]] void reject_handler(Oid fn, const char* problem) {
    ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                    errmsg("%s cannot be an inbox handler: %s", format_procedure(fn), problem),
                    errhint("A handler is a function taking (jsonb) or no argument.")));
}

// Pseudo-typed results mark functions meant for the system (triggers, language and access
// method handlers, internal), which must not be called as plain functions; void and record are
// what a handler may return.
bool returns_handler_result(Oid result_type) {
    return get_typtype(result_type) != TYPTYPE_PSEUDO || result_type == VOIDOID ||
           result_type == RECORDOID;
}

void resolve_handler(Handler* handler, Oid fn, MemoryContext context) {
    HeapTuple tuple = OidIsValid(fn) ? SearchSysCache1(PROCOID, ObjectIdGetDatum(fn)) : nullptr;
    if (!HeapTupleIsValid(tuple))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_FUNCTION),
                        errmsg("fn (OID %u) is not an existing function", fn),
                        errhint("Name the handler as 'name(jsonb)' or 'name()'.")));
    auto* proc = (Form_pg_proc)GETSTRUCT(tuple);
    char kind = proc->prokind;
    bool returns_set = proc->proretset;
    Oid result_type = proc->prorettype;
    int nargs = proc->pronargs;
    bool takes_jsonb = nargs == 1 && proc->proargtypes.values[0] == JSONBOID;
    bool strict = proc->proisstrict;
    ReleaseSysCache(tuple);

    if (kind != PROKIND_FUNCTION) reject_handler(fn, "it is not a plain function");
    if (returns_set) reject_handler(fn, "it returns a set");
    if (!returns_handler_result(result_type))
        reject_handler(fn, "it returns a pseudo-type reserved for the system");
    if (nargs != 0 && !takes_jsonb) reject_handler(fn, "it takes arguments other than (jsonb)");

    // Calling through fmgr skips the executor's privilege check: the caller must be allowed to
    // execute fn, exactly as if it had called fn itself.
    AclResult acl = pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE);
    if (acl != ACLCHECK_OK) aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(fn));
    InvokeFunctionExecuteHook(fn);

    fmgr_info_cxt(fn, &handler->call, context);
    handler->fn = fn;
    handler->checked_for = GetUserId();
    handler->functions_version = functions_version;
    handler->takes_payload = takes_jsonb;
    handler->strict = strict;
    handler->resolved = true;
}

Handler* handler_for_call_site(FunctionCallInfo fcinfo, Oid fn) {
    if (!function_callback_registered) {
        CacheRegisterSyscacheCallback(PROCOID, note_function_change, (Datum)0);
        function_callback_registered = true;
    }
    auto* handler = static_cast<Handler*>(fcinfo->flinfo->fn_extra);
    if (handler == nullptr) {
        handler =
            static_cast<Handler*>(MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(Handler)));
        fcinfo->flinfo->fn_extra = handler;
    }
    if (!handler->resolved || handler->fn != fn || handler->checked_for != GetUserId() ||
        handler->functions_version != functions_version) {
        handler->resolved = false;  // stays unresolved if resolution fails
        resolve_handler(handler, fn, fcinfo->flinfo->fn_mcxt);
    }
    return handler;
}

void run_handler(Handler* handler, Datum payload, bool payload_is_null) {
    LOCAL_FCINFO(call, 1);
    InitFunctionCallInfoData(*call, &handler->call, handler->takes_payload ? 1 : 0, InvalidOid,
                             nullptr, nullptr);
    call->args[0].value = payload;
    call->args[0].isnull = payload_is_null;
    FunctionCallInvoke(call);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_claim);
PGDLLEXPORT Datum inbox_claim(PG_FUNCTION_ARGS) {
    PG_RETURN_BOOL(claim_marker(require_marker_key(fcinfo)));
}

PG_FUNCTION_INFO_V1(inbox_apply);
PGDLLEXPORT Datum inbox_apply(PG_FUNCTION_ARGS) {
    MarkerKey key = require_marker_key(fcinfo);
    pg::require_argument(fcinfo, 2, "fn");
    Handler* handler = handler_for_call_site(fcinfo, PG_GETARG_OID(2));

    bool payload_is_null = PG_ARGISNULL(3);
    Datum payload = payload_is_null ? (Datum)0 : PG_GETARG_DATUM(3);
    // A STRICT handler would silently not run on a NULL payload while the marker says "done".
    if (handler->takes_payload && handler->strict && payload_is_null)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("payload is NULL but %s is STRICT and would not run",
                               format_procedure(handler->fn)),
                        errhint("Pass a payload, or declare the handler CALLED ON NULL INPUT.")));

    bool first_delivery = claim_marker(key);
    if (first_delivery) run_handler(handler, payload, payload_is_null);
    PG_RETURN_BOOL(first_delivery);
}

// Deletes one marker, so that a deliberate redelivery is processed again; true when there was one.
PG_FUNCTION_INFO_V1(inbox_forget);
PGDLLEXPORT Datum inbox_forget(PG_FUNCTION_ARGS) {
    PG_RETURN_BOOL(change_marker(MarkerChange::remove, require_marker_key(fcinfo)));
}
}
