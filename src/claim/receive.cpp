// inbox.receive and inbox.complete: the claim with every outcome of a delivery (processed,
// duplicate with the stored result, in_progress without waiting, payload_mismatch, poisoned),
// and the result that every later copy gets.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
}

#include "claim/claimed_cause.hpp"
#include "claim/marker_attempts.hpp"
#include "claim/outcome.hpp"
#include "claim/payload_fingerprint.hpp"
#include "claim/pending_claims.hpp"
#include "pg/arguments.hpp"
#include "pg/spi.hpp"
#include "pg/subtransaction.hpp"
#include "pg/writable.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"
#include "store/marker_ops.hpp"
#include "store/marker_table.hpp"

namespace {

int64 fingerprint_of(Datum payload) {
    return payload_fingerprint(DatumGetJsonbP(payload));
}

struct MarkerInsert {
    Consumer* consumer;  // id 0: not registered yet, which the insert does
    MessageKey* key;
    bool inserted;
};

// Citus inserts into a distributed store on a worker, over a connection of its own that no
// setting of this session reaches: it carries SET LOCAL statements there (and into every
// connection the transaction opens later) when citus.propagate_set_commands is 'local'. A
// rollback of the subtransaction undoes them on the workers as here.
void set_lock_timeout_on_workers(const char* value) {
    (void)set_config_option("citus.propagate_set_commands", "local", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    StringInfoData statement;
    initStringInfo(&statement);
    appendStringInfo(&statement, "SET LOCAL lock_timeout = %s", quote_literal_cstr(value));
    if (SPI_execute(statement.data, false, 0) != SPI_OK_UTILITY)
        elog(ERROR, "could not set lock_timeout on the nodes holding the markers");
    pfree(statement.data);
}

// The insert of a no-wait receive, as the body of its subtransaction.
void insert_within_a_millisecond(void* argument) {
    auto* insert = static_cast<MarkerInsert*>(argument);
    bool distributed = marker_store()->distribution != StoreDistribution::local;
    char* session_timeout =
        distributed ? GetConfigOptionByName("lock_timeout", nullptr, false) : nullptr;
    int nest_level = NewGUCNestLevel();
    (void)set_config_option("lock_timeout", "1", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true,
                            0, false);
    if (distributed) set_lock_timeout_on_workers("1");
    if (insert->consumer->id == 0)
        find_consumer_to_act(insert->consumer->name, Registration::by_claim, insert->consumer);
    insert->inserted = insert_claimed_marker(*insert->consumer, insert->key);
    // The workers' connections serve the rest of the caller's transaction.
    if (distributed) set_lock_timeout_on_workers(session_timeout);
    AtEOXact_GUC(true, nest_level);
}

// Inserts the marker unless another open transaction holds a copy, which then is answered
// in_progress at once: the insert runs in a subtransaction whose lock_timeout is a millisecond,
// whatever the session's lock_timeout says. So does the registration of a new consumer, which
// another open transaction may be making. The table's own lock is taken before, with the
// session's timeout, so that only a copy's transaction can make the answer in_progress (not DDL
// on the table).
bool insert_marker_without_waiting(Consumer* consumer, MessageKey* key, bool* in_progress) {
    LockRelationOid(marker_store()->markers, RowExclusiveLock);
    MarkerInsert insert = {consumer, key, false};
    ErrorData* error = pg::run_in_subtransaction(insert_within_a_millisecond, &insert);
    *in_progress = error != nullptr;
    if (error == nullptr) return insert.inserted;
    if (error->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE) ReThrowError(error);
    FreeErrorData(error);
    return false;
}

struct Receipt {
    Outcome outcome;
    Datum result;  // 0: NULL
    int32 attempts;
};

Receipt receive(text* consumer_name, text* message_id, Datum payload, bool has_payload, bool wait) {
    Receipt receipt = {Outcome::processed, 0, 0};
    pg::spi_connect();
    Consumer consumer;
    // Without waiting, a new consumer registers within the marker's insert (below).
    Registration registration = wait ? Registration::by_claim : Registration::none;
    if (!find_consumer_to_act(consumer_name, registration, &consumer))
        consumer = {.id = 0,
                    .max_attempts = 0,
                    .owner = InvalidOid,
                    .owner_missing = false,
                    .owner_name = {},
                    .name = consumer_name};
    MessageKey key;
    store_message_id(message_id, &key);
    receipt.attempts = earlier_failures(consumer, key);
    if (poisoned(receipt.attempts, consumer.max_attempts)) {
        receipt.outcome = Outcome::poisoned;
        count_answer(consumer_name, Answer::poisoned);
        SPI_finish();
        return receipt;
    }

    bool in_progress = false;
    bool inserted = wait ? insert_claimed_marker(consumer, &key)
                         : insert_marker_without_waiting(&consumer, &key, &in_progress);
    if (in_progress) {
        receipt.outcome = Outcome::in_progress;
        count_answer(consumer_name, Answer::in_progress);
    } else if (inserted) {
        if (has_payload) keep_fingerprint(consumer.id, &key, fingerprint_of(payload));
        remember_claim(consumer_name, message_id);
        count_claim(consumer_name, true);
    } else {
        MarkerDetails details;
        read_details(consumer.id, &key, &details);
        receipt.attempts = 0;
        if (has_payload && details.has_fingerprint &&
            details.fingerprint != fingerprint_of(payload)) {
            receipt.outcome = Outcome::payload_mismatch;
            count_answer(consumer_name, Answer::payload_mismatch);
        } else {
            receipt.outcome = Outcome::duplicate;
            receipt.result = details.result;
            count_claim(consumer_name, false);
        }
    }
    SPI_finish();
    return receipt;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_receive);
PGDLLEXPORT Datum inbox_receive(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.receive()");
    text* consumer = require_consumer_name(fcinfo, 0);
    text* message_id = require_message_id(fcinfo, 1);
    pg::require_argument(fcinfo, 3, "wait",
                         "true waits for an open copy; false answers in_progress.");
    const OutcomeType* type = outcome_type_for_call_site(fcinfo);
    Receipt receipt = receive(consumer, message_id, PG_ARGISNULL(2) ? (Datum)0 : PG_GETARG_DATUM(2),
                              !PG_ARGISNULL(2), PG_GETARG_BOOL(3));
    Datum values[3] = {outcome_datum(type, receipt.outcome), receipt.result,
                       Int32GetDatum(receipt.attempts)};
    bool nulls[3] = {false, receipt.result == 0, false};
    return HeapTupleGetDatum(heap_form_tuple(type->receipt, values, nulls));
}

PG_FUNCTION_INFO_V1(inbox_complete);
PGDLLEXPORT Datum inbox_complete(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.complete()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    text* message_id = require_message_id(fcinfo, 1);
    pg::require_argument(fcinfo, 2, "result", "The result is what every later copy is answered.");
    pg::spi_connect();
    Consumer consumer;
    MessageKey key;
    store_message_id(message_id, &key);
    bool kept = find_consumer_to_act(consumer_name, Registration::none, &consumer) &&
                keep_result(consumer.id, &key, PG_GETARG_DATUM(2));
    SPI_finish();
    if (!kept)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("message \"%s\" of consumer \"%s\" has no marker",
                               text_to_cstring(message_id), text_to_cstring(consumer_name)),
                        errhint("Receive or claim it first, in this transaction or an earlier "
                                "one.")));
    PG_RETURN_VOID();
}
}
