// inbox.claim, inbox.apply and inbox.forget. The hot path: C-style, inside PostgreSQL's error
// handling.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
}

#include "claim/handler.hpp"
#include "claim/marker_attempts.hpp"
#include "claim/pending_claims.hpp"
#include "pg/arguments.hpp"
#include "pg/spi.hpp"
#include "pg/writable.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_arguments.hpp"
#include "store/marker_ops.hpp"
#include "store/marker_table.hpp"

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

// The same in a database still at 1.0, whose table holds the keys as text.
MarkerStatement insert_marker_1_0 = {
    .sql =
        "INSERT INTO inbox.messages (consumer, message_id) VALUES ($1, $2) "
        "ON CONFLICT (consumer, message_id) DO NOTHING",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

MarkerStatement delete_marker_1_0 = {
    .sql =
        "DELETE FROM inbox.messages WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE "
        "pg_catalog.\"C\" AND message_id OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

bool change_marker_1_0(MarkerStatement* statement, const MarkerIdentity& identity) {
    Datum values[2] = {PointerGetDatum(identity.consumer), PointerGetDatum(identity.message_id)};
    execute_as_store_owner(statement, values);
    return SPI_processed > 0;
}

// The store to write. A database at 1.0 may be updated to 1.1 while this call waits for the
// update's lock: the lock that the statement takes anyway is taken first, so that the update's
// invalidations arrive before the layout is chosen, and the call goes on with the new store.
MarkerLayout layout_for_change() {
    const MarkerStore* store = marker_store();
    if (store->layout != MarkerLayout::version_1_0) return store->layout;
    LockRelationOid(store->markers, RowExclusiveLock);
    return marker_store()->layout;
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
    Consumer consumer;  // id 0 in a database still at 1.0, whose attempts are not counted
    MessageKey key;
};

// Claims the marker in the caller's transaction, in an SPI connection of its own. True: first
// delivery, do the work. False: a committed marker exists. Waits for a concurrent, uncommitted
// copy. With `refuse_poisoned`, a message that failed max_attempts times raises IB001 instead.
bool claim_marker(const MarkerIdentity& identity, bool refuse_poisoned, StoredMarker* stored) {
    pg::spi_connect();
    bool inserted = false;
    stored->consumer.id = 0;
    if (layout_for_change() == MarkerLayout::version_1_0) {
        inserted = change_marker_1_0(&insert_marker_1_0, identity);
    } else {
        Consumer& consumer = stored->consumer;
        find_consumer(identity.consumer, true, &consumer);
        store_message_id(identity.message_id, &stored->key);
        if (refuse_poisoned && consumer.max_attempts > 0) {
            int32 failures = earlier_failures(consumer, stored->key);
            if (poisoned(failures, consumer.max_attempts)) {
                count_answer(identity.consumer, Answer::poisoned);
                report_poisoned(identity, failures);
            }
        }
        inserted = insert_claimed_marker(consumer, &stored->key);
    }
    SPI_finish();
    return count_claim(identity.consumer, inserted);
}

bool forget_marker(const MarkerIdentity& identity) {
    pg::spi_connect();
    bool removed = false;
    if (layout_for_change() == MarkerLayout::version_1_0) {
        removed = change_marker_1_0(&delete_marker_1_0, identity);
    } else {
        Consumer consumer;
        if (find_consumer(identity.consumer, false, &consumer)) {  // else no marker either
            MessageKey stored;
            store_message_id(identity.message_id, &stored);
            removed = forget_claimed_marker(consumer, &stored);
        }
    }
    SPI_finish();
    return removed;
}

// Runs the handler; an error it raises takes the marker with the transaction, and is what the
// failed attempt of the message records.
void run_handler_noting_failure(Handler* handler, Datum payload, bool payload_is_null,
                                const StoredMarker& marker) {
    if (marker.consumer.id == 0) {
        run_handler(handler, payload, payload_is_null);
        return;
    }
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

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_claim);
PGDLLEXPORT Datum inbox_claim(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.claim()");
    StoredMarker stored;
    PG_RETURN_BOOL(claim_marker(require_marker_identity(fcinfo), false, &stored));
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

    StoredMarker stored;
    bool first_delivery = claim_marker(identity, true, &stored);
    if (first_delivery) run_handler_noting_failure(handler, payload, payload_is_null, stored);
    PG_RETURN_BOOL(first_delivery);
}

// Deletes one marker, so that a deliberate redelivery is processed again; true when there was
// one. Its failed attempts go with it.
PG_FUNCTION_INFO_V1(inbox_forget);
PGDLLEXPORT Datum inbox_forget(PG_FUNCTION_ARGS) {
    pg::require_writable("inbox.forget()");
    PG_RETURN_BOOL(forget_marker(require_marker_identity(fcinfo)));
}
}
