// The marker table inbox.messages as claim, forget and the purge reach it: only through SQL
// statements with kept plans (so that a partitioned or Citus-distributed marker table works the
// same as a local one), run as the table's owner. C-style: this is the hot path.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/spi.h"
#include "storage/lockdefs.h"
}

// A statement on the marker table, prepared on first use and kept for the backend's life; the
// plan cache re-plans it when the table changes.
struct MarkerStatement {
    const char* sql;
    int nargs;
    Oid argtypes[3];
    SPIPlanPtr plan;
};

// The marker table, locked in `mode` (NoLock: only found); InvalidOid when it does not exist
// (DROP EXTENSION). Never resolved through the search_path.
Oid find_marker_table(LOCKMODE mode);

// Runs the statement in the caller's SPI connection as the owner of the marker table, inside a
// security-restricted operation: callers need EXECUTE on our functions, never privileges on the
// table, and a trigger on the table cannot change the caller's session. Returns the SPI result
// code; the caller's identity is back before any of its code runs again (on error, transaction
// abort restores it).
int execute_as_marker_owner(MarkerStatement* statement, const Datum* values);
