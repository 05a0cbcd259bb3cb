// See outcome.hpp.
extern "C" {
#include "postgres.h"
#include "access/htup_details.h"
#include "catalog/pg_enum.h"
#include "funcapi.h"
#include "utils/memutils.h"
#include "utils/inval.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "claim/outcome.hpp"
#include "pg/compat.hpp"

namespace {

// The labels of inbox.outcome, in Outcome's order.
constexpr const char* outcome_labels[outcome_count] = {
    "processed", "duplicate", "in_progress", "payload_mismatch", "poisoned", "failed"};

// The labels of the enum looked up last, for the backend: a call site's cache lasts one
// statement, and six catalog lookups per statement of a single receive are 3% of its cost. Any
// change to pg_enum (the extension dropped, say) forgets them.
struct KnownLabels {
    Oid enum_type;  // InvalidOid: none known
    Oid labels[outcome_count];
};
KnownLabels known_labels = {InvalidOid, {}};
bool enum_callback_registered = false;

void forget_labels(Datum, pg::SyscacheId, uint32) {
    known_labels.enum_type = InvalidOid;
}

void find_labels(Oid enum_type, Oid* labels) {
    if (!enum_callback_registered) {
        CacheRegisterSyscacheCallback(ENUMOID, forget_labels, (Datum)0);
        enum_callback_registered = true;
    }
    if (known_labels.enum_type != enum_type) {
        known_labels.enum_type = InvalidOid;  // stays unknown if a lookup fails
        for (int i = 0; i < outcome_count; i++) {
            known_labels.labels[i] =
                GetSysCacheOid2(ENUMTYPOIDNAME, Anum_pg_enum_oid, ObjectIdGetDatum(enum_type),
                                CStringGetDatum(outcome_labels[i]));
            if (!OidIsValid(known_labels.labels[i]))
                elog(ERROR, "inbox.outcome has no label \"%s\"", outcome_labels[i]);
        }
        known_labels.enum_type = enum_type;
    }
    std::memcpy(labels, known_labels.labels, sizeof(known_labels.labels));
}

TupleDesc result_type(FunctionCallInfo fcinfo) {
    TupleDesc result = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &result) != TYPEFUNC_COMPOSITE)
        elog(ERROR, "%s must return a composite type", "an inbox outcome function");
    return result;
}

}  // namespace

OutcomeType lookup_outcome_type(FunctionCallInfo, int outcome_attribute, TupleDesc result) {
    OutcomeType type;
    find_labels(TupleDescAttr(result, outcome_attribute)->atttypid, type.labels);
    type.receipt = result;
    return type;
}

const OutcomeType* outcome_type_for_call_site(FunctionCallInfo fcinfo, int outcome_attribute) {
    auto* cached = static_cast<OutcomeType*>(fcinfo->flinfo->fn_extra);
    if (cached != nullptr) return cached;
    MemoryContext caller_context = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
    TupleDesc result = BlessTupleDesc(CreateTupleDescCopy(result_type(fcinfo)));
    auto* type = static_cast<OutcomeType*>(palloc(sizeof(OutcomeType)));
    *type = lookup_outcome_type(fcinfo, outcome_attribute, result);
    MemoryContextSwitchTo(caller_context);
    fcinfo->flinfo->fn_extra = type;
    return type;
}

Datum outcome_datum(const OutcomeType* type, Outcome outcome) {
    return ObjectIdGetDatum(type->labels[static_cast<int>(outcome)]);
}
