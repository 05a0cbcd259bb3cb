// inbox.configure_consumer: a consumer's own retention, which the purge follows, its
// max_attempts, past which its claims answer poisoned, and (1.2) its owner, the role whose members
// alone may act for it; all kept in its registry row.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"
}

#include "pg/writable.hpp"
#include "stats/max_attempts_warning.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"

extern "C" {

PG_FUNCTION_INFO_V1(inbox_configure_consumer);
PGDLLEXPORT Datum inbox_configure_consumer(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.configure_consumer()");
    text* consumer = require_consumer_name(fcinfo, 0);
    NullableDatum retention = {.value = PG_GETARG_DATUM(1), .isnull = PG_ARGISNULL(1)};
    NullableDatum max_attempts = {.value = PG_GETARG_DATUM(2), .isnull = PG_ARGISNULL(2)};
    if (!retention.isnull) {
        Interval one_second = {.time = USECS_PER_SEC, .day = 0, .month = 0};
        if (DatumGetInt32(DirectFunctionCall2(interval_cmp, retention.value,
                                              IntervalPGetDatum(&one_second))) < 0)
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("retention must be at least 1 second"),
                            errhint("NULL gives the consumer the default, inbox.retention.")));
    }
    if (!max_attempts.isnull && DatumGetInt32(max_attempts.value) < 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("max_attempts must be at least 1"),
                        errhint("NULL lets a message fail any number of times.")));
    // 1.1's declaration has no owner (ConsumerSettings).
    bool declares_owner = PG_NARGS() > 3;
    NullableDatum owner = {.value = declares_owner ? PG_GETARG_DATUM(3) : (Datum)0,
                           .isnull = declares_owner && PG_ARGISNULL(3)};
    configure_consumer(consumer, ConsumerSettings{.retention = retention,
                                                  .max_attempts = max_attempts,
                                                  .owner = declares_owner ? &owner : nullptr});
    if (!max_attempts.isnull) warn_unless_attempts_counted(consumer);
    PG_RETURN_VOID();
}
}
