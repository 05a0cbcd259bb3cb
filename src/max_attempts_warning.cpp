// The trigger max_attempts_needs_preload on inbox.consumer_registry: a consumer's max_attempts
// acts on failed attempts, which are counted in shared memory, and that exists only when the
// library is preloaded. Without the preload the limit is stored all the same, and takes effect
// from the first start with it; a warning says so wherever it is set (configure_consumer, an
// UPDATE, a restore). A warning rather than an error: configuring before the restart that adds
// the preload is a fair order of work, and a pg_restore into such a server must not fail.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "commands/trigger.h"
#include "executor/spi.h"
}

#include "attempts_table.hpp"

extern "C" {

PG_FUNCTION_INFO_V1(inbox_warn_max_attempts_without_preload);
PGDLLEXPORT Datum inbox_warn_max_attempts_without_preload(PG_FUNCTION_ARGS) {
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("inbox.warn_max_attempts_without_preload() is a trigger function")));
    if (attempts_counted()) return PointerGetDatum(nullptr);
    auto* trigger = reinterpret_cast<TriggerData*>(fcinfo->context);
    HeapTuple row =
        TRIGGER_FIRED_BY_UPDATE(trigger->tg_event) ? trigger->tg_newtuple : trigger->tg_trigtuple;
    TupleDesc columns = trigger->tg_relation->rd_att;
    char* consumer = SPI_getvalue(row, columns, SPI_fnumber(columns, "name"));
    ereport(WARNING,
            (errmsg("max_attempts of consumer \"%s\" has no effect until inbox is preloaded",
                    consumer != nullptr ? consumer : "?"),
             errdetail("Failed attempts are counted in shared memory, which exists only when inbox "
                       "is in shared_preload_libraries: until then no message is poisoned."),
             errhint("Add inbox to shared_preload_libraries and restart the server; the limit is "
                     "kept and applies from then on.")));
    return PointerGetDatum(nullptr);
}
}
