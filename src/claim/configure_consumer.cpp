// inbox.configure_consumer: a consumer's own retention, which the purge follows, its
// max_attempts, past which its claims answer poisoned, and (1.2) its owner, the role whose members
// alone may act for it; all kept in its registry row. From 1.3 a call changes only the settings
// it names, and inbox.reset_consumer gives named ones their defaults back, as ALTER ... SET and
// ALTER ... RESET do; a database not updated from 1.1 or 1.2 keeps its function's meaning: every
// setting set, a NULL giving the default.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "pg/writable.hpp"
#include "stats/max_attempts_warning.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"

namespace {

NullableDatum argument(FunctionCallInfo fcinfo, int number) {
    return {.value = PG_ARGISNULL(number) ? (Datum)0 : PG_GETARG_DATUM(number),
            .isnull = PG_ARGISNULL(number)};
}

void require_valid_settings(const NullableDatum& retention, const NullableDatum& max_attempts,
                            const char* default_hint) {
    if (!retention.isnull) {
        Interval one_second = {.time = USECS_PER_SEC, .day = 0, .month = 0};
        if (DatumGetInt32(DirectFunctionCall2(interval_cmp, retention.value,
                                              IntervalPGetDatum(&one_second))) < 0)
            ereport(ERROR,
                    (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                     errmsg("retention must be at least 1 second"), errhint("%s", default_hint)));
    }
    if (!max_attempts.isnull && DatumGetInt32(max_attempts.value) < 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("max_attempts must be at least 1"), errhint("%s", default_hint)));
}

// Changes `settings` of `consumer`.
void configure(text* consumer, const ConsumerSettings& settings) {
    configure_consumer(consumer, settings);
    if (settings.max_attempts.named && !settings.max_attempts.value.isnull)
        warn_unless_attempts_counted(consumer);
}

// The setting that reset_consumer names `name`, or an error (22023).
ConsumerSetting* setting_named(ConsumerSettings* settings, const char* name) {
    if (strcmp(name, "retention") == 0) return &settings->retention;
    if (strcmp(name, "max_attempts") == 0) return &settings->max_attempts;
    if (strcmp(name, "owner") == 0) return &settings->owner;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("a consumer has no setting \"%s\"", name),
                    errhint("The settings are retention, max_attempts and owner.")));
}

}  // namespace

extern "C" {

// 1.1's (consumer, retention, max_attempts) and 1.2's (..., owner): every setting the function
// has is set, a NULL giving the default.
PG_FUNCTION_INFO_V1(inbox_configure_consumer);
PGDLLEXPORT Datum inbox_configure_consumer(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.configure_consumer()");
    text* consumer = require_consumer_name(fcinfo, 0);
    NullableDatum retention = argument(fcinfo, 1);
    NullableDatum max_attempts = argument(fcinfo, 2);
    require_valid_settings(retention, max_attempts,
                           "NULL gives the consumer the default: inbox.retention, or no limit.");
    bool declares_owner = PG_NARGS() > 3;
    configure(consumer,
              ConsumerSettings{.retention = {.named = true, .value = retention},
                               .max_attempts = {.named = true, .value = max_attempts},
                               .owner = {.named = declares_owner,
                                         .value = declares_owner ? argument(fcinfo, 3)
                                                                 : NullableDatum{0, true}}});
    PG_RETURN_VOID();
}

// 1.3's: the settings given (not NULL) change, the others keep their values.
PG_FUNCTION_INFO_V1(inbox_configure_consumer_1_3);
PGDLLEXPORT Datum inbox_configure_consumer_1_3(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.configure_consumer()");
    text* consumer = require_consumer_name(fcinfo, 0);
    NullableDatum retention = argument(fcinfo, 1);
    NullableDatum max_attempts = argument(fcinfo, 2);
    NullableDatum owner = argument(fcinfo, 3);
    require_valid_settings(
        retention, max_attempts,
        "A setting left out, or NULL, keeps its value; inbox.reset_consumer gives it its default.");
    configure(consumer, ConsumerSettings{
                            .retention = {.named = !retention.isnull, .value = retention},
                            .max_attempts = {.named = !max_attempts.isnull, .value = max_attempts},
                            .owner = {.named = !owner.isnull, .value = owner}});
    PG_RETURN_VOID();
}

// inbox.reset_consumer(consumer, VARIADIC settings): the settings named go back to their
// defaults (inbox.retention, no failure limit, no owner).
PG_FUNCTION_INFO_V1(inbox_reset_consumer);
PGDLLEXPORT Datum inbox_reset_consumer(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.reset_consumer()");
    text* consumer = require_consumer_name(fcinfo, 0);
    constexpr NullableDatum none = {.value = (Datum)0, .isnull = true};
    ConsumerSettings settings = {.retention = {.named = false, .value = none},
                                 .max_attempts = {.named = false, .value = none},
                                 .owner = {.named = false, .value = none}};
    Datum* names = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    if (!PG_ARGISNULL(1))
        deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT, &names,
                          &nulls, &count);
    if (count == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("inbox.reset_consumer() needs the settings to reset"),
                        errhint("For example: SELECT inbox.reset_consumer('billing', 'retention', "
                                "'owner');")));
    for (int i = 0; i < count; i++) {
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("the settings to reset must not be NULL")));
        setting_named(&settings, TextDatumGetCString(names[i]))->named = true;
    }
    configure(consumer, settings);
    PG_RETURN_VOID();
}
}
