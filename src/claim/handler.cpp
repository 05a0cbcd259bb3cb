// See handler.hpp.
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

#include "claim/handler.hpp"
#include "pg/compat.hpp"

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

namespace {

// Bumped by every change to pg_proc this backend hears of.
uint64 functions_version = 0;
bool function_callback_registered = false;

void note_function_change(Datum, pg::SyscacheId, uint32) {
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
    AclResult acl = pg::object_privilege(ProcedureRelationId, fn, GetUserId(), ACL_EXECUTE);
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

}  // namespace

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

void require_runnable(const Handler* handler, bool payload_is_null) {
    if (handler->takes_payload && handler->strict && payload_is_null)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("payload is NULL but %s is STRICT and would not run",
                               format_procedure(handler->fn)),
                        errhint("Pass a payload, or declare the handler CALLED ON NULL INPUT.")));
}
