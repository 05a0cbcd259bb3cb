// A part of a statement that may fail alone, as PL/pgSQL runs a block with an EXCEPTION clause.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/elog.h"
}

namespace pg {

// Runs body(argument) in a subtransaction of its own. Returns nullptr when it returned (the
// subtransaction is released into the caller's); when it raised, the subtransaction is rolled
// back and the error is returned, copied into the caller's memory context. A query cancel
// (statement_timeout included) is never returned: it goes on to end the statement, as PL/pgSQL's
// WHEN OTHERS lets it. C-style: no C++ object may live across the call.
ErrorData* run_in_subtransaction(void (*body)(void*), void* argument);

}  // namespace pg
