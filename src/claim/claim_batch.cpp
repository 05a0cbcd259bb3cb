// inbox.claim_batch and inbox.apply_batch: many messages of one consumer in one call. Their
// markers are inserted by one statement in the primary key's order, so that two overlapping
// batches take their locks in the same order and never deadlock; an id repeated in a batch
// counts once. apply_batch runs each new message's handler in a subtransaction of its own: one
// that raises is rolled back alone, its marker taken back, and reported as failed.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"
}

#include <algorithm>

#include "claim/claimed_cause.hpp"
#include "claim/handler.hpp"
#include "claim/marker_attempts.hpp"
#include "claim/outcome.hpp"
#include "claim/pending_claims.hpp"
#include "pg/arguments.hpp"
#include "pg/palloc_elements.hpp"
#include "pg/spi.hpp"
#include "pg/subtransaction.hpp"
#include "pg/writable.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"
#include "store/marker_ops.hpp"

namespace {

// One message of a batch, in the order the caller gave them.
struct BatchMessage {
    text* id;
    Datum payload;
    bool payload_is_null;
    MessageKey key;
    BatchMessage* first;  // the first message of the batch with this id (itself, most often)
    bool poisoned;
    bool inserted;
};

struct Batch {
    BatchMessage* messages;
    int count;
};

// Key order; among messages with one id, the earlier one first.
bool precedes(const BatchMessage* left, const BatchMessage* right) {
    int order = compare_message_keys(left->key, right->key);
    return order != 0 ? order < 0 : left < right;
}

// Claims every distinct, not poisoned message of the batch in one statement, in key order.
void claim_batch_messages(const Consumer& consumer, Batch* batch) {
    auto** sorted = pg::palloc_elements<BatchMessage*>(batch->count);
    for (int i = 0; i < batch->count; i++) sorted[i] = &batch->messages[i];
    std::sort(sorted, sorted + batch->count, precedes);  // pure C++: no PostgreSQL call inside

    auto** keys = pg::palloc_elements<MessageKey*>(batch->count);
    auto** claimed = pg::palloc_elements<BatchMessage*>(batch->count);
    int distinct = 0;
    for (int i = 0; i < batch->count; i++) {
        BatchMessage* message = sorted[i];
        if (i > 0 && compare_message_keys(sorted[i - 1]->key, message->key) == 0) {
            message->first = sorted[i - 1]->first;
            continue;
        }
        message->first = message;
        if (message->poisoned) continue;
        keys[distinct] = &message->key;
        claimed[distinct++] = message;
    }
    auto* inserted = pg::palloc_elements<bool>(distinct);
    if (distinct > 0) insert_claimed_markers(consumer, keys, distinct, inserted);
    for (int i = 0; i < distinct; i++) claimed[i]->inserted = inserted[i];
}

// The earlier failures of each message, for a consumer with a limit.
void find_poisoned(const Consumer& consumer, text* consumer_name, Batch* batch) {
    for (int i = 0; i < batch->count; i++) {
        BatchMessage* message = &batch->messages[i];
        message->poisoned =
            poisoned(earlier_failures(consumer, message->key), consumer.max_attempts);
        if (message->poisoned) count_answer(consumer_name, Answer::poisoned);
    }
}

void prepare_message(BatchMessage* message, text* id) {
    message->id = require_message_id_value(id);
    store_message_id(message->id, &message->key);
    message->first = message;
    message->poisoned = false;
    message->inserted = false;
}

// claim_batch's ids: a text[] without NULLs.
Batch read_ids(FunctionCallInfo fcinfo) {
    pg::require_argument(fcinfo, 1, "message_ids");
    ArrayType* array = PG_GETARG_ARRAYTYPE_P(1);
    Datum* elements = nullptr;
    bool* nulls = nullptr;
    int count = 0;
    deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls, &count);
    Batch batch = {pg::palloc_elements<BatchMessage>(count), count};
    for (int i = 0; i < count; i++) {
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("message_ids[%d] must not be NULL", i + 1),
                            errhint("Every element of message_ids is a message id.")));
        prepare_message(&batch.messages[i], DatumGetTextPP(elements[i]));
        batch.messages[i].payload = 0;
        batch.messages[i].payload_is_null = true;
    }
    return batch;
}

[[noreturn]] void reject_message(int index, const char* problem) {
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("messages[%d] %s", index, problem),
             errhint("messages is a JSON array of {\"id\": \"...\", \"payload\": ...}.")));
}

// apply_batch's messages: a JSON array of {"id": text, "payload": any JSON}.
Batch read_messages(FunctionCallInfo fcinfo) {
    pg::require_argument(fcinfo, 2, "messages");
    Jsonb* messages = PG_GETARG_JSONB_P(2);
    if (!JB_ROOT_IS_ARRAY(messages) || JB_ROOT_IS_SCALAR(messages))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("messages must be a JSON array"),
                 errhint("messages is a JSON array of {\"id\": \"...\", \"payload\": ...}.")));
    int count = static_cast<int>(JB_ROOT_COUNT(messages));
    Batch batch = {pg::palloc_elements<BatchMessage>(count), count};
    for (int i = 0; i < count; i++) {
        JsonbValue* element = getIthJsonbValueFromContainer(&messages->root, i);
        if (element->type != jbvBinary || !JsonContainerIsObject(element->val.binary.data))
            reject_message(i, "must be a JSON object");
        JsonbValue name = {};
        name.type = jbvString;
        name.val.string.val = const_cast<char*>("id");
        name.val.string.len = 2;
        JsonbValue* id = findJsonbValueFromContainer(element->val.binary.data, JB_FOBJECT, &name);
        if (id == nullptr || id->type != jbvString) reject_message(i, "needs an \"id\" string");
        prepare_message(&batch.messages[i],
                        cstring_to_text_with_len(id->val.string.val, id->val.string.len));
        name.val.string.val = const_cast<char*>("payload");
        name.val.string.len = 7;
        JsonbValue* payload =
            findJsonbValueFromContainer(element->val.binary.data, JB_FOBJECT, &name);
        batch.messages[i].payload_is_null = payload == nullptr || payload->type == jbvNull;
        batch.messages[i].payload =
            batch.messages[i].payload_is_null ? 0 : JsonbPGetDatum(JsonbValueToJsonb(payload));
    }
    return batch;
}

// One message's handler, as the body of its subtransaction: what the handler sends has its
// message as cause, which the subtransaction's rollback forgets (claimed_cause.hpp).
struct HandlerCall {
    Handler* handler;
    text* consumer;
    const BatchMessage* message;
};

void call_handler(void* argument) {
    const auto* call = static_cast<const HandlerCall*>(argument);
    remember_claim(call->consumer, call->message->id);
    run_handler(call->handler, call->message->payload, call->message->payload_is_null);
}

struct BatchRow {
    Outcome outcome;
    int sqlstate;  // 0: none
    const char* message;
};

void put_row(ReturnSetInfo* result, const OutcomeType* type, const BatchMessage& message,
             const BatchRow& row) {
    Datum values[4] = {PointerGetDatum(message.id), outcome_datum(type, row.outcome),
                       row.sqlstate != 0 ? CStringGetTextDatum(unpack_sql_state(row.sqlstate)) : 0,
                       row.message != nullptr ? CStringGetTextDatum(row.message) : 0};
    bool nulls[4] = {false, false, row.sqlstate == 0, row.message == nullptr};
    tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
}

}  // namespace

extern "C" {

// The ids claimed now, each once, in the order given.
PG_FUNCTION_INFO_V1(inbox_claim_batch);
PGDLLEXPORT Datum inbox_claim_batch(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.claim_batch()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    Batch batch = read_ids(fcinfo);
    InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);

    pg::spi_connect();
    Consumer consumer;
    find_consumer_to_act(consumer_name, Registration::by_claim, &consumer);
    claim_batch_messages(consumer, &batch);
    SPI_finish();

    int64 inserted = 0, duplicates = 0;
    const BatchMessage* last_inserted = nullptr;
    for (int i = 0; i < batch.count; i++) {
        const BatchMessage& message = batch.messages[i];
        if (message.first != &message) continue;  // a repeat counts once
        if (!message.inserted) {
            duplicates++;
            continue;
        }
        inserted++;
        last_inserted = &message;
        Datum value = PointerGetDatum(message.id);
        bool isnull = false;
        tuplestore_putvalues(result->setResult, result->setDesc, &value, &isnull);
    }
    if (last_inserted != nullptr) remember_claim(consumer_name, last_inserted->id);
    count_claims(consumer_name, inserted, duplicates);
    return (Datum)0;
}

PG_FUNCTION_INFO_V1(inbox_apply_batch);
PGDLLEXPORT Datum inbox_apply_batch(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.apply_batch()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    pg::require_argument(fcinfo, 1, "fn");
    Oid fn = PG_GETARG_OID(1);
    Handler* handler = handler_for_call_site(fcinfo, fn);
    Batch batch = read_messages(fcinfo);
    for (int i = 0; i < batch.count; i++)
        require_runnable(handler, batch.messages[i].payload_is_null);
    InitMaterializedSRF(fcinfo, 0);
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    OutcomeType type = lookup_outcome_type(fcinfo, 1, result->setDesc);

    pg::spi_connect();
    Consumer consumer;
    find_consumer_to_act(consumer_name, Registration::by_claim, &consumer);
    if (consumer.max_attempts > 0) find_poisoned(consumer, consumer_name, &batch);
    claim_batch_messages(consumer, &batch);
    SPI_finish();

    // Each message's own outcome, decided at its first occurrence; a repeat is a duplicate of
    // a processed message and shares any other outcome.
    auto* rows = pg::palloc_elements<BatchRow>(batch.count);
    int64 processed = 0, duplicates = 0;
    for (int i = 0; i < batch.count; i++) {
        BatchMessage& message = batch.messages[i];
        BatchRow* row = &rows[i];
        *row = BatchRow{Outcome::duplicate, 0, nullptr};
        if (message.first != &message) {
            const BatchRow& first = rows[message.first - batch.messages];
            if (first.outcome != Outcome::processed) *row = first;
        } else if (message.poisoned) {
            row->outcome = Outcome::poisoned;
        } else if (!message.inserted) {
            duplicates++;
        } else {
            // A handler may drop or replace itself, revoke its own EXECUTE or switch roles: each
            // message is handled as a call of apply would be, by the function as it is now.
            handler = handler_for_call_site(fcinfo, fn);
            require_runnable(handler, message.payload_is_null);
            // A subtransaction each: an error rolls back this message's work alone.
            HandlerCall call = {handler, consumer_name, &message};
            ErrorData* error = pg::run_in_subtransaction(call_handler, &call);
            if (error == nullptr) {
                row->outcome = Outcome::processed;
                processed++;
            } else {
                row->outcome = Outcome::failed;
                row->sqlstate = error->sqlerrcode;
                row->message = error->message;
                fail_attempt_now(attempt_key(consumer, message.key), error);
                pg::spi_connect();
                withdraw_marker(consumer.id, &message.key);
                SPI_finish();
            }
        }
        put_row(result, &type, message, *row);
    }
    count_claims(consumer_name, processed, duplicates);
    return (Datum)0;
}
}
