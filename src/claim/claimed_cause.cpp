// See claimed_cause.hpp. A rollback to a savepoint that undid the latest claim leaves the
// transaction without a cause until its next claim: the earlier claims it still holds are not
// kept (one buffer, not a stack), and a message never names a marker that does not exist.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "funcapi.h"
#include "utils/builtins.h"
}

#include <cstring>

#include "claim/claimed_cause.hpp"
#include "pg/compat.hpp"
#include "store/message_key.hpp"

namespace {

struct ClaimedCause {
    LocalTransactionId transaction;  // InvalidLocalTransactionId: none
    SubTransactionId subtransaction;
    std::size_t consumer_len;
    std::size_t message_id_len;
    char consumer[inbox::max_consumer_bytes];
    char message_id[inbox::max_message_id_bytes];
};

ClaimedCause latest = {InvalidLocalTransactionId, InvalidSubTransactionId, 0, 0, {}, {}};
bool callback_registered = false;

// A released savepoint hands its claim to its parent; one rolled back forgets it, and so does
// the rollback of any ancestor (subtransaction ids grow within a transaction: every one at or
// after the one rolled back is inside it).
void follow_subtransaction(SubXactEvent event, SubTransactionId subtransaction,
                           SubTransactionId parent, void*) {
    if (latest.transaction != pg::local_transaction_id()) return;
    if (event == SUBXACT_EVENT_COMMIT_SUB && latest.subtransaction == subtransaction)
        latest.subtransaction = parent;
    else if (event == SUBXACT_EVENT_ABORT_SUB && latest.subtransaction >= subtransaction)
        latest.transaction = InvalidLocalTransactionId;
}

}  // namespace

void remember_claim(const text* consumer, const text* message_id) {
    if (!callback_registered) {
        RegisterSubXactCallback(follow_subtransaction, nullptr);
        callback_registered = true;
    }
    latest.transaction = pg::local_transaction_id();
    latest.subtransaction = GetCurrentSubTransactionId();
    latest.consumer_len = VARSIZE_ANY_EXHDR(consumer);
    latest.message_id_len = VARSIZE_ANY_EXHDR(message_id);
    Assert(latest.consumer_len <= sizeof(latest.consumer));
    Assert(latest.message_id_len <= sizeof(latest.message_id));
    std::memcpy(latest.consumer, VARDATA_ANY(consumer), latest.consumer_len);
    std::memcpy(latest.message_id, VARDATA_ANY(message_id), latest.message_id_len);
}

bool claimed_cause(Datum* consumer, Datum* message_id) {
    if (latest.transaction != pg::local_transaction_id()) return false;
    *consumer = PointerGetDatum(
        cstring_to_text_with_len(latest.consumer, static_cast<int>(latest.consumer_len)));
    *message_id = PointerGetDatum(
        cstring_to_text_with_len(latest.message_id, static_cast<int>(latest.message_id_len)));
    return true;
}

extern "C" {

// The current transaction's latest claim, or a row of NULLs.
PG_FUNCTION_INFO_V1(inbox_claimed_cause);
PGDLLEXPORT Datum inbox_claimed_cause(PG_FUNCTION_ARGS) {
    TupleDesc row_type = nullptr;
    if (get_call_result_type(fcinfo, nullptr, &row_type) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("inbox.claimed_cause() must return a row")));
    Datum values[2] = {0, 0};
    bool nulls[2] = {true, true};
    if (claimed_cause(&values[0], &values[1])) nulls[0] = nulls[1] = false;
    return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(row_type), values, nulls));
}
}
