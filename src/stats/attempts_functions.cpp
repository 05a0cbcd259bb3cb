// The SQL functions behind inbox.attempts (attempts_table.hpp holds the failures): 1.2's by
// consumer name, and 1.1's by consumer id for a database not updated yet.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "pg/compat.hpp"
#include "pg/spi.hpp"
#include "stats/attempts_table.hpp"
#include "stats/details_visibility.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_table.hpp"

namespace {

KeptAttempt* current_attempts(int* count) {
    return attempts_kept(MyDatabaseId, marker_store()->registry, count);
}

// A row of the failure with its consumer as `consumer`: message_id and the record follow; the
// message id and the error text only when `with_details` (details_visibility.hpp).
void put_attempt_row(ReturnSetInfo* result, Datum consumer, const KeptAttempt& attempt,
                     bool with_details) {
    const AttemptKey& key = attempt.key;
    const AttemptRecord& record = attempt.record;
    std::size_t id_length = inbox::decoded_message_id_length(key.message_key, key.length);
    auto* message_id = static_cast<text*>(palloc(VARHDRSZ + id_length));
    SET_VARSIZE(message_id, VARHDRSZ + id_length);
    inbox::decode_message_id(key.message_key, key.length, VARDATA(message_id));
    Datum values[6] = {consumer,
                       PointerGetDatum(message_id),
                       Int32GetDatum(record.failures),
                       CStringGetTextDatum(unpack_sql_state(record.sqlstate)),
                       CStringGetTextDatum(record.last_message),
                       TimestampTzGetDatum(record.last_failed_at)};
    bool nulls[6] = {false,
                     !with_details,
                     false,
                     record.sqlstate == 0,
                     !with_details || record.last_message[0] == '\0',
                     false};
    tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
}

text* consumer_of(const AttemptKey& key) {
    return cstring_to_text_with_len(key.consumer, key.consumer_length);
}

}  // namespace

extern "C" {

// inbox.failed_attempts(): the failures kept for the current database, behind inbox.attempts,
// each by its consumer's name (registered or not: the first claims of a consumer may all have
// rolled back, its registration with them). Every consumer's failures; the message ids and error
// texts of an owned consumer only to those who may see them (details_visibility.hpp).
PG_FUNCTION_INFO_V1(inbox_failed_attempts);
PGDLLEXPORT Datum inbox_failed_attempts(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    if (!attempts_any()) return (Datum)0;
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    int count = 0;
    KeptAttempt* attempts = current_attempts(&count);
    DetailsVisibility visibility = details_visibility();
    pg::spi_connect();
    for (int i = 0; i < count; i++) {
        text* consumer = consumer_of(attempts[i].key);
        put_attempt_row(result, PointerGetDatum(consumer), attempts[i],
                        details_visible(visibility, consumer));
    }
    SPI_finish();
    return (Datum)0;
}

// inbox.attempt_entries(), behind inbox.attempts of 1.1: each failure by its consumer's id;
// those of a consumer not registered are not shown.
PG_FUNCTION_INFO_V1(inbox_attempt_entries);
PGDLLEXPORT Datum inbox_attempt_entries(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    if (!attempts_any()) return (Datum)0;
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    int count = 0;
    KeptAttempt* attempts = current_attempts(&count);
    pg::spi_connect();
    for (int i = 0; i < count; i++) {
        Consumer consumer;
        if (find_consumer(consumer_of(attempts[i].key), Registration::none, &consumer))
            put_attempt_row(result, Int16GetDatum(consumer.id), attempts[i], true);
    }
    SPI_finish();
    return (Datum)0;
}
}
