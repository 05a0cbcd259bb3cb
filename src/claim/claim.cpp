// inbox.claim, inbox.apply and inbox.forget. The hot path, one way down: the SQL function, the
// claim of its marker in the compact store (store/), PostgreSQL (pg/). A database still at the
// layout of 1.0 takes its own way once, at the SQL function (store/marker_store_1_0.hpp).
// C-style, inside PostgreSQL's error handling.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
}

#include "claim/claimed_cause.hpp"
#include "claim/handler.hpp"
#include "claim/marker_attempts.hpp"
#include "claim/pending_claims.hpp"
#include "pg/arguments.hpp"
#include "pg/spi.hpp"
#include "pg/writable.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"
#include "store/marker_ops.hpp"
#include "store/marker_store_1_0.hpp"

// ---- markers -------------------------------------------------------------------------------

namespace {

struct MarkerIdentity {
    text* consumer;
    text* message_id;
};

// The identity of the marker of a marker-taking function, arguments 0 and 1.
MarkerIdentity require_marker_identity(FunctionCallInfo fcinfo) {
    return MarkerIdentity{.consumer = require_consumer_name(fcinfo, 0),
                          .message_id = require_message_id(fcinfo, 1)};
}

// The raised error for a message that failed max_attempts times.
[[noreturn]] void report_poisoned(const MarkerIdentity& identity, int32 failures) {
    ereport(ERROR,
            (errcode(MAKE_SQLSTATE('I', 'B', '0', '0', '1')),
             errmsg_plural("message \"%s\" of consumer \"%s\" is poisoned: it failed %d time",
                           "message \"%s\" of consumer \"%s\" is poisoned: it failed %d times",
                           failures, text_to_cstring(identity.message_id),
                           text_to_cstring(identity.consumer), failures),
             errhint("Dead-letter it, or inbox.forget it to let it be tried again.")));
}

// A marker as the compact store keeps it, and its consumer: what its failed attempts are known
// by.
struct StoredMarker {
    Consumer consumer;
    MessageKey key;
};

// Claims the marker in the caller's transaction, in an SPI connection of its own. True: first
// delivery, do the work. False: a committed marker exists. Waits for a concurrent, uncommitted
// copy. With `refuse_poisoned`, a message that failed max_attempts times raises IB001 instead.
bool claim_marker(const MarkerIdentity& identity, bool refuse_poisoned, StoredMarker* stored) {
    pg::spi_connect();
    Consumer& consumer = stored->consumer;
    find_consumer_to_act(identity.consumer, Registration::by_claim, &consumer);
    store_message_id(identity.message_id, &stored->key);
    if (refuse_poisoned && consumer.max_attempts > 0) {
        int32 failures = earlier_failures(consumer, stored->key);
        if (poisoned(failures, consumer.max_attempts)) {
            count_answer(identity.consumer, Answer::poisoned);
            report_poisoned(identity, failures);
        }
    }
    bool inserted = insert_claimed_marker(consumer, &stored->key);
    SPI_finish();
    if (inserted) remember_claim(identity.consumer, identity.message_id);
    return count_claim(identity.consumer, inserted);
}

bool forget_marker(const MarkerIdentity& identity) {
    pg::spi_connect();
    Consumer consumer;
    bool registered = find_consumer_to_act(identity.consumer, Registration::none, &consumer);
    if (!registered) consumer.name = identity.consumer;  // no marker, nor owner
    MessageKey stored;
    store_message_id(identity.message_id, &stored);
    Forgotten forgotten = forget_claimed_marker(consumer, registered, &stored);
    SPI_finish();
    // false says that no marker went: that its failures did (a poisoned message released) is
    // said too.
    if (!forgotten.marker && forgotten.failures > 0)
        ereport(
            NOTICE,
            (errmsg("message \"%s\" of consumer \"%s\" had no marker; its %d failed %s cleared",
                    text_to_cstring(identity.message_id), text_to_cstring(identity.consumer),
                    forgotten.failures, forgotten.failures == 1 ? "attempt was" : "attempts were"),
             errdetail("Its next delivery starts afresh: no earlier failure counts against it.")));
    return forgotten.marker;
}

// Runs the handler; an error it raises takes the marker with the transaction, and is what the
// failed attempt of the message records.
void run_handler_noting_failure(Handler* handler, Datum payload, bool payload_is_null,
                                const StoredMarker& marker) {
    MemoryContext caller_context = CurrentMemoryContext;
    PG_TRY();
    { run_handler(handler, payload, payload_is_null); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        ErrorData* error = CopyErrorData();
        note_failure_cause(attempt_key(marker.consumer, marker.key), error);
        FreeErrorData(error);
        PG_RE_THROW();
    }
    PG_END_TRY();
}

// The claim in a database still at 1.0: its attempts are not counted, so no message is refused
// as poisoned, nor is a handler's failure noted.
bool claim_marker_1_0(const MarkerIdentity& identity) {
    bool inserted = insert_marker_1_0(identity.consumer, identity.message_id);
    if (inserted) remember_claim(identity.consumer, identity.message_id);
    return count_claim(identity.consumer, inserted);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_claim);
PGDLLEXPORT Datum inbox_claim(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.claim()");
    MarkerIdentity identity = require_marker_identity(fcinfo);
    if (markers_still_at_1_0()) PG_RETURN_BOOL(claim_marker_1_0(identity));
    StoredMarker stored;
    PG_RETURN_BOOL(claim_marker(identity, false, &stored));
}

PG_FUNCTION_INFO_V1(inbox_apply);
PGDLLEXPORT Datum inbox_apply(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.apply()");
    MarkerIdentity identity = require_marker_identity(fcinfo);
    pg::require_argument(fcinfo, 2, "fn");
    Handler* handler = handler_for_call_site(fcinfo, PG_GETARG_OID(2));
    bool payload_is_null = PG_ARGISNULL(3);
    Datum payload = payload_is_null ? (Datum)0 : PG_GETARG_DATUM(3);
    require_runnable(handler, payload_is_null);

    bool first_delivery = false;
    if (markers_still_at_1_0()) {
        first_delivery = claim_marker_1_0(identity);
        if (first_delivery) run_handler(handler, payload, payload_is_null);
    } else {
        StoredMarker stored;
        first_delivery = claim_marker(identity, true, &stored);
        if (first_delivery) run_handler_noting_failure(handler, payload, payload_is_null, stored);
    }
    PG_RETURN_BOOL(first_delivery);
}

// Deletes one marker, so that a deliberate redelivery is processed again; true when there was
// one. Its failed attempts go with it.
PG_FUNCTION_INFO_V1(inbox_forget);
PGDLLEXPORT Datum inbox_forget(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.forget()");
    MarkerIdentity identity = require_marker_identity(fcinfo);
    if (markers_still_at_1_0())
        PG_RETURN_BOOL(delete_marker_1_0(identity.consumer, identity.message_id));
    PG_RETURN_BOOL(forget_marker(identity));
}
}
