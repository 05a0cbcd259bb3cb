// inbox.outcome, the answer to a delivery, as C++ and as the SQL enum; and inbox.receipt, the
// composite inbox.receive returns.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/tupdesc.h"
}

enum class Outcome { processed, duplicate, in_progress, payload_mismatch, poisoned, failed };
constexpr int outcome_count = 6;

struct OutcomeType {
    Oid labels[outcome_count];  // the enum's label OIDs, in Outcome's order
    TupleDesc receipt;          // of the function's composite result
};

// The outcome enum and the composite result of the function of `fcinfo`, whose attribute
// `outcome_attribute` is the enum; looked up once per call site (kept in fn_extra).
const OutcomeType* outcome_type_for_call_site(FunctionCallInfo fcinfo, int outcome_attribute = 0);

// The same without the call site's cache (for a function whose fn_extra holds something else;
// it is looked up once per call).
OutcomeType lookup_outcome_type(FunctionCallInfo fcinfo, int outcome_attribute, TupleDesc result);

Datum outcome_datum(const OutcomeType* type, Outcome outcome);
