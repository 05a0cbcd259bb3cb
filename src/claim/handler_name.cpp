// inbox.handler_named(fn text): the function a handler written as text names, for the overloads
// of inbox.apply and inbox.apply_batch that an untyped literal goes to (a string is PostgreSQL's
// preferred reading of it). 'credit(jsonb)' is read as regprocedure's input reads it, once per
// call site, as a regprocedure literal is read once per statement; 'credit' is refused with the
// signature to write, where regprocedure's input says only "expected a left parenthesis".
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/regproc.h"
}

#include <cstring>

#include "pg/arguments.hpp"
#include "pg/compat.hpp"

namespace {

// The text a call site read last and the function it named, in fn_mcxt.
struct NamedHandler {
    text* written;
    Oid fn;
};

// A name that denotes one function (to_regproc: NULL when none or several) is shown with its
// argument types.
[[noreturn]] void reject_without_argument_types(text* written) {
    LOCAL_FCINFO(lookup, 1);
    InitFunctionCallInfoData(*lookup, nullptr, 1, InvalidOid, nullptr, nullptr);
    lookup->args[0] = {.value = PointerGetDatum(written), .isnull = false};
    Datum only = to_regproc(lookup);
    char* name = text_to_cstring(written);
    if (!lookup->isnull)
        ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                        errmsg("handler \"%s\" is written without its argument types", name),
                        errhint("Write '%s': fn names a function with its argument types.",
                                format_procedure(DatumGetObjectId(only)))));
    ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                    errmsg("handler \"%s\" is written without its argument types", name),
                    errhint("Write it as '%s(jsonb)' or '%s()': fn names a function with its "
                            "argument types.",
                            name, name)));
}

Oid function_named(text* written) {
    char* signature = text_to_cstring(written);
    if (std::strchr(signature, '(') == nullptr) reject_without_argument_types(written);
    return DatumGetObjectId(DirectFunctionCall1(regprocedurein, CStringGetDatum(signature)));
}

bool same_text(const text* left, const text* right) {
    return VARSIZE_ANY_EXHDR(left) == VARSIZE_ANY_EXHDR(right) &&
           memcmp(VARDATA_ANY(left), VARDATA_ANY(right), VARSIZE_ANY_EXHDR(left)) == 0;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_handler_named);
PGDLLEXPORT Datum inbox_handler_named(PG_FUNCTION_ARGS) {
    pg::require_argument(fcinfo, 0, "fn");
    text* written = PG_GETARG_TEXT_PP(0);
    auto* last = static_cast<NamedHandler*>(fcinfo->flinfo->fn_extra);
    if (last != nullptr && same_text(last->written, written)) PG_RETURN_OID(last->fn);
    Oid fn = function_named(written);
    if (last == nullptr) {
        last = static_cast<NamedHandler*>(
            MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(NamedHandler)));
        fcinfo->flinfo->fn_extra = last;
    } else {
        pfree(last->written);
    }
    last->written =
        static_cast<text*>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, VARSIZE_ANY(written)));
    memcpy(last->written, written, VARSIZE_ANY(written));
    last->fn = fn;
    PG_RETURN_OID(fn);
}
}
