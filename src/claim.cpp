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
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

#include "marker_table.hpp"
#include "message_key.hpp"
#include "pg/arguments.hpp"
#include "pg/spi.hpp"
#include "stats_pending.hpp"

namespace {

// ---- keys ----------------------------------------------------------------------------------

struct MarkerKey {
    text* consumer;
    text* message_id;
};

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

// Both keys of a marker-taking function, arguments 0 and 1.
MarkerKey require_marker_key(FunctionCallInfo fcinfo) {
    return MarkerKey{
        .consumer = require_key_part(fcinfo, 0, "consumer", inbox::max_consumer_bytes),
        .message_id = require_key_part(fcinfo, 1, "message_id", inbox::max_message_id_bytes)};
}

// ---- markers -------------------------------------------------------------------------------

// ON CONFLICT DO NOTHING lets the primary key arbitrate: a concurrent uncommitted copy makes the
// insert wait for its transaction; under REPEATABLE READ a conflict with a row the snapshot
// cannot see is a serialization failure, never a wrong answer.
MarkerStatement insert_marker = {
    .sql =
        "INSERT INTO inbox.messages (consumer, message_id) VALUES ($1, $2) "
        "ON CONFLICT (consumer, message_id) DO NOTHING",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

MarkerStatement delete_marker = {
    .sql =
        "DELETE FROM inbox.messages WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE "
        "pg_catalog.\"C\" AND message_id OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

// One marker, in an SPI connection of its own; true when a row was inserted or deleted.
bool change_marker(MarkerStatement* statement, const MarkerKey& key) {
    pg::spi_connect();
    Datum values[2] = {PointerGetDatum(key.consumer), PointerGetDatum(key.message_id)};
    execute_as_marker_owner(statement, values);
    bool changed = SPI_processed > 0;
    SPI_finish();
    return changed;
}

// Inserts the marker in the caller's transaction. True: first delivery, do the work. False: a
// committed marker exists. Waits for a concurrent, uncommitted copy to commit or roll back.
bool claim_marker(const MarkerKey& key) {
    return count_claim(key.consumer, change_marker(&insert_marker, key));
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
    PG_RETURN_BOOL(change_marker(&delete_marker, require_marker_key(fcinfo)));
}
}
