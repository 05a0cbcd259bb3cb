// Whether a table still has the columns the extension created it with, so that a row may be
// written into it directly (no statement): same names and types in the same order, nothing
// dropped, no CHECK constraint and no generated or identity column, which only the executor's
// INSERT would apply.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/tupdesc.h"
}

namespace pg {

bool columns_as_created(TupleDesc columns, const char* const names[], const Oid types[], int count);

}  // namespace pg
