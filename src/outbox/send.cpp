// inbox.send and inbox.send_bytes: an outgoing message written in the caller's transaction
// (docs/outbox.md). The library's form of inbox.send_message, the SQL edition's body, which says
// what a send does step by step; regress outbox_sql_edition holds the two to the same answers,
// rows, lock and notification. In C because a send is on the application's hot path: the
// PL/pgSQL body costs several times the INSERT it makes.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
}

#include <cstdio>
#include <cstring>

#include "claim/claimed_cause.hpp"
#include "outbox/message_id.hpp"
#include "pg/compat.hpp"
#include "pg/spi.hpp"

namespace {

constexpr int max_name_bytes = 255;  // of a destination and of a key
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
    if (bytes > max_name_bytes)
        ereport(ERROR,
                (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                 errmsg("destination is %d bytes long, longer than %d", bytes, max_name_bytes)));
}

void check_key(const text* key) {
    if (key == nullptr) return;
    int bytes = VARSIZE_ANY_EXHDR(key);
    if (bytes == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("key must not be empty"),
                        errhint("Pass NULL (the default) for a message without a key.")));
    if (bytes > max_name_bytes)
        ereport(ERROR, (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                        errmsg("key is %d bytes long, longer than %d", bytes, max_name_bytes)));
}

void check_headers(Jsonb* headers) {
    if (headers == nullptr || (JB_ROOT_IS_OBJECT(headers) && !JB_ROOT_IS_SCALAR(headers))) return;
    text* type = DatumGetTextPP(DirectFunctionCall1(jsonb_typeof, JsonbPGetDatum(headers)));
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("headers must be a JSON object, not %s", text_to_cstring(type)),
                    errhint("For example: '{\"content-type\": \"application/json\"}'.")));
}

// Commit order within a key: the ordinal is taken under a transaction-level lock on
// (destination, key), the advisory lock the SQL edition takes on
// hashtextextended(octet_length(destination)::text || ':' || destination || key, 7172693807).
void lock_key(const text* destination, const text* key) {
    int destination_bytes = VARSIZE_ANY_EXHDR(destination);
    int key_bytes = VARSIZE_ANY_EXHDR(key);
    char name[16 + 2 * max_name_bytes];
    int length = std::snprintf(name, sizeof(name), "%d:", destination_bytes);
    std::memcpy(name + length, VARDATA_ANY(destination), destination_bytes);
    length += destination_bytes;
    std::memcpy(name + length, VARDATA_ANY(key), key_bytes);
    length += key_bytes;
    Datum lock =
        hash_any_extended(reinterpret_cast<const unsigned char*>(name), length, 7172693807);
    DirectFunctionCall1(pg_advisory_xact_lock_int8, lock);
}

// Runs as the function's owner, the extension's, who owns the table: callers need EXECUTE on
// inbox.send, never a privilege on the table. Every name is qualified: the plan is re-analysed
// under the caller's search_path when it changes.
const char* const insert_message_sql =
    "INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, id, destination, key, "
    "headers, payload, payload_bytes, cause_consumer, cause_message_id) "
    "VALUES (pg_catalog.nextval('inbox.outbox_ordinal'::pg_catalog.regclass), $1, $1, $2, $3, $4, "
    "$5, $6, $7, $8, $9)";
const Oid insert_message_types[] = {TIMESTAMPTZOID, UUIDOID,  TEXTOID, TEXTOID, JSONBOID,
                                    JSONBOID,       BYTEAOID, TEXTOID, TEXTOID};
SPIPlanPtr insert_message_plan = nullptr;

// The owner of the called function, looked up once per call site (as SECURITY DEFINER does).
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

void insert_message(FunctionCallInfo fcinfo, const Datum* values, const char* nulls) {
    if (insert_message_plan == nullptr)
        insert_message_plan = pg::prepare_kept_plan(
            insert_message_sql, lengthof(insert_message_types), insert_message_types);
    Oid caller;
    int security_context;
    GetUserIdAndSecContext(&caller, &security_context);
    SetUserIdAndSecContext(function_owner(fcinfo), security_context | SECURITY_LOCAL_USERID_CHANGE |
                                                       SECURITY_RESTRICTED_OPERATION);
    pg::spi_connect();
    pg::execute_plan(insert_message_plan, insert_message_sql, values, nulls);
    SPI_finish();
    SetUserIdAndSecContext(caller, security_context);
}

// Arguments: destination, payload (jsonb or bytea: `payload_column`, 0 or 1), key, headers.
Datum send_message(FunctionCallInfo fcinfo, int payload_column) {
    require_writable_transaction();
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
    if (key != nullptr) lock_key(destination, key);

    TimestampTz sent_at = GetCurrentTimestamp();
    auto* id = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    *id = outbox_message_id(sent_at);
    Datum values[9] = {TimestampTzGetDatum(sent_at),
                       UUIDPGetDatum(id),
                       PointerGetDatum(destination),
                       PointerGetDatum(key),
                       PointerGetDatum(headers),
                       0,
                       0,
                       0,
                       0};
    char nulls[9] = {' ', ' ', ' ', key == nullptr ? 'n' : ' ', headers == nullptr ? 'n' : ' ', 'n',
                     'n', 'n', 'n'};
    values[5 + payload_column] = PG_GETARG_DATUM(1);
    nulls[5 + payload_column] = ' ';
    if (claimed_cause(&values[7], &values[8])) nulls[7] = nulls[8] = ' ';
    insert_message(fcinfo, values, nulls);
    // Delivered at commit only (and once per destination per transaction).
    Async_Notify("inbox_outbox", text_to_cstring(destination));
    PG_RETURN_UUID_P(id);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_send);
PGDLLEXPORT Datum inbox_send(PG_FUNCTION_ARGS) {
    return send_message(fcinfo, 0);
}

PG_FUNCTION_INFO_V1(inbox_send_bytes);
PGDLLEXPORT Datum inbox_send_bytes(PG_FUNCTION_ARGS) {
    return send_message(fcinfo, 1);
}
}
