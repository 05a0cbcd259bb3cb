// inbox.send and inbox.send_bytes: an outgoing message written in the caller's transaction
// (docs/outbox.md). The library's form of inbox.send_message, the SQL edition's body, which says
// what a send does step by step; regress outbox_sql_edition holds the two to the same answers,
// errors, rows, ids and lock. In C because a send is on the application's hot path: the
// PL/pgSQL body costs several times the INSERT it makes.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_proc.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include "claim/claimed_cause.hpp"
#include "outbox/commit_notification.hpp"
#include "outbox/key_order_lock.hpp"
#include "outbox/message_id.hpp"
#include "pg/compat.hpp"
#include "store/coordinator_tables.hpp"
#include "store/outbox_insert.hpp"

namespace {

constexpr const char* destination_hint =
    "The destination names where the relay publishes the message: an exchange, an endpoint.";

void require_writable_transaction() {
    if (RecoveryInProgress())
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("cannot send a message on a standby"),
                        errhint("inbox.send writes the message in the transaction of the work: "
                                "run that transaction on the primary.")));
    if (XactReadOnly)
        ereport(ERROR, (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                        errmsg("cannot send a message in a read-only transaction"),
                        errhint("inbox.send writes the message: send from a read-write "
                                "transaction.")));
}

void require_destination(const text* destination) {
    if (destination == nullptr)
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                        errmsg("destination must not be NULL"), errhint("%s", destination_hint)));
    int bytes = VARSIZE_ANY_EXHDR(destination);
    if (bytes == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("destination must not be empty"), errhint("%s", destination_hint)));
    if (bytes > max_outbox_name_bytes)
        ereport(ERROR, (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                        errmsg("destination is %d bytes long, longer than %d", bytes,
                               max_outbox_name_bytes)));
}

void check_key(const text* key) {
    if (key == nullptr) return;
    int bytes = VARSIZE_ANY_EXHDR(key);
    if (bytes == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("key must not be empty"),
                        errhint("Pass NULL (the default) for a message without a key.")));
    if (bytes > max_outbox_name_bytes)
        ereport(ERROR,
                (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                 errmsg("key is %d bytes long, longer than %d", bytes, max_outbox_name_bytes)));
}

void check_headers(Jsonb* headers) {
    if (headers == nullptr || (JB_ROOT_IS_OBJECT(headers) && !JB_ROOT_IS_SCALAR(headers))) return;
    text* type = DatumGetTextPP(DirectFunctionCall1(jsonb_typeof, JsonbPGetDatum(headers)));
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("headers must be a JSON object, not %s", text_to_cstring(type)),
                    errhint("For example: '{\"content-type\": \"application/json\"}'.")));
}

// The owner of the called function, looked up once per call site (as SECURITY DEFINER does):
// the message is written as the extension's owner, who owns the table, so that callers need
// EXECUTE on inbox.send, never a privilege on the table.
Oid function_owner(FunctionCallInfo fcinfo) {
    FmgrInfo* function = fcinfo->flinfo;
    if (function->fn_extra == nullptr) {
        HeapTuple tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(function->fn_oid));
        if (!HeapTupleIsValid(tuple))
            elog(ERROR, "cache lookup failed for function %u", function->fn_oid);
        Oid* owner = static_cast<Oid*>(MemoryContextAlloc(function->fn_mcxt, sizeof(Oid)));
        *owner = ((Form_pg_proc)GETSTRUCT(tuple))->proowner;
        ReleaseSysCache(tuple);
        function->fn_extra = owner;
    }
    return *static_cast<Oid*>(function->fn_extra);
}

// Arguments: destination, payload (jsonb or bytea: `payload_column`), key, headers.
Datum send_message(FunctionCallInfo fcinfo, OutgoingValue payload_column) {
    require_writable_transaction();
    require_coordinator_table("inbox.send()", "inbox.outbox_messages",
                              "Send from a transaction on the coordinator, where the relays "
                              "connect: a function that sends is not to be delegated to a "
                              "worker (create_distributed_function).");
    const text* destination = PG_ARGISNULL(0) ? nullptr : PG_GETARG_TEXT_PP(0);
    const text* key = PG_ARGISNULL(2) ? nullptr : PG_GETARG_TEXT_PP(2);
    Jsonb* headers = PG_ARGISNULL(3) ? nullptr : PG_GETARG_JSONB_P(3);
    require_destination(destination);
    check_key(key);
    if (PG_ARGISNULL(1))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("payload must not be NULL"),
                        errhint("A message without a body sends '{}'::jsonb, 'null'::jsonb or "
                                "''::bytea.")));
    check_headers(headers);
    if (key != nullptr) lock_key_order(destination, key);

    TimestampTz sent_at = GetCurrentTimestamp();
    auto* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    *id = outbox_message_id(sent_at);
    Datum values[outgoing_values] = {};
    bool nulls[outgoing_values] = {};
    values[sent_at_value] = TimestampTzGetDatum(sent_at);
    values[id_value] = UUIDPGetDatum(id);
    values[destination_value] = PointerGetDatum(destination);
    values[key_value] = PointerGetDatum(key);
    nulls[key_value] = key == nullptr;
    values[headers_value] = PointerGetDatum(headers);
    nulls[headers_value] = headers == nullptr;
    values[payload_value] = values[payload_bytes_value] = PG_GETARG_DATUM(1);
    nulls[payload_value] = payload_column != payload_value;
    nulls[payload_bytes_value] = payload_column != payload_bytes_value;
    nulls[cause_consumer_value] = nulls[cause_message_id_value] =
        !claimed_cause(&values[cause_consumer_value], &values[cause_message_id_value]);
    // The transaction's id before the ordinal that the insert takes: relay_take's scan floor
    // passes an ordinal only once every transaction id below one taken after it has ended
    // (inbox.outbox_scan_floor).
    (void)GetTopTransactionId();
    insert_outgoing_message(function_owner(fcinfo), values, nulls);
    notify_at_commit(destination);
    PG_RETURN_UUID_P(id);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_send);
PGDLLEXPORT Datum inbox_send(PG_FUNCTION_ARGS) {
    return send_message(fcinfo, payload_value);
}

PG_FUNCTION_INFO_V1(inbox_send_bytes);
PGDLLEXPORT Datum inbox_send_bytes(PG_FUNCTION_ARGS) {
    return send_message(fcinfo, payload_bytes_value);
}
}
