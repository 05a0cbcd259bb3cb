// inbox.relay_take in the library: the checks of its arguments and the scan floor in PL/pgSQL
// (inbox.relay_take_floor, one body for both editions), then the leases made directly
// (direct_take.hpp). Where the direct take cannot serve the table (a trigger, a permission hook),
// the SQL edition's take (inbox.relay_take_messages) does it all. Declared SECURITY DEFINER: it
// runs as the extension's owner, who owns the table.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/timestamp.h"
}

#include "outbox/direct_take.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"

namespace {

constexpr int take_arguments = 4;  // relay, max_messages, lease, destinations
const Oid take_argument_types[take_arguments] = {TEXTOID, INT4OID, INTERVALOID, TEXTARRAYOID};

const char* const floor_sql = "SELECT inbox.relay_take_floor($1, $2, $3)";
SPIPlanPtr floor_plan = nullptr;
const char* const take_sql = "SELECT * FROM inbox.relay_take_messages($1, $2, $3, $4)";
SPIPlanPtr take_plan = nullptr;

// The arguments as the statements' parameters.
struct TakeArguments {
    Datum values[take_arguments];
    char nulls[take_arguments];
};

TakeArguments take_arguments_of(FunctionCallInfo fcinfo) {
    TakeArguments arguments;
    for (int i = 0; i < take_arguments; i++) {
        bool null = PG_ARGISNULL(i);
        arguments.values[i] = null ? Datum(0) : PG_GETARG_DATUM(i);
        arguments.nulls[i] = null ? 'n' : ' ';
    }
    return arguments;
}

// Checks the arguments (the errors of relay_take) and returns where the scan starts.
int64 scan_floor(const TakeArguments& arguments) {
    if (floor_plan == nullptr)
        floor_plan = pg::prepare_kept_plan(floor_sql, 3, take_argument_types);
    pg::spi_connect();
    pg::execute_plan(floor_plan, floor_sql, arguments.values, arguments.nulls);
    bool null = true;
    Datum floor = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &null);
    int64 value = null ? 0 : DatumGetInt64(floor);
    SPI_finish();
    return value;
}

void take_with_statement(const TakeArguments& arguments, ReturnSetInfo* result) {
    if (take_plan == nullptr)
        take_plan = pg::prepare_kept_plan(take_sql, take_arguments, take_argument_types);
    pg::spi_connect();
    pg::execute_plan(take_plan, take_sql, arguments.values, arguments.nulls);
    for (uint64 i = 0; i < SPI_processed; i++)
        tuplestore_puttuple(result->setResult, SPI_tuptable->vals[i]);
    SPI_finish();
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_relay_take);
PGDLLEXPORT Datum inbox_relay_take(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    TakeArguments arguments = take_arguments_of(fcinfo);
    TakeTables tables;
    if (!direct_take_possible(&tables)) {
        take_with_statement(arguments, result);
        return Datum(0);
    }
    TakeRequest request = {};
    request.scan_floor = scan_floor(arguments);
    // The lease runs from here, after the waits for the table's lock (a sender of many keys, a
    // backfill) and the floor's (a release): from the call, a take that waited longer than the
    // lease would hand out leases already expired, the next relay's to take.
    request.now = GetCurrentTimestamp();
    // A lease is a write (25006 in a read-only transaction, on a standby), as the statement's
    // FOR UPDATE is; the floor's own write is only now and then.
    PreventCommandIfReadOnly("relay_take()");
    // Not NULL from here: relay_take_floor refused them.
    request.relay = PG_GETARG_TEXT_PP(0);
    request.max_messages = PG_GETARG_INT32(1);
    request.lease = PG_GETARG_INTERVAL_P(2);
    request.destinations = PG_ARGISNULL(3) ? nullptr : PG_GETARG_ARRAYTYPE_P(3);
    request.max_attempts = outbox_max_attempts;
    take_directly(tables, request, result->setResult, result->setDesc);
    return Datum(0);
}
}
