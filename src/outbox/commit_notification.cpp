// See commit_notification.hpp. The destinations of a transaction form an array in the order of
// their first sends, each entry stamped with the subtransaction that made it. Entries of a
// subtransaction form the tail of the array (an inner subtransaction ends, merged into its
// parent or dropped, before its parent can send again), and every entry's subtransaction is the
// current one or one of its parents: a destination already there needs no second entry.
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "commands/async.h"
#include "utils/memutils.h"
}

#include <cstring>

#include "outbox/commit_notification.hpp"

namespace {

constexpr std::size_t max_destination_bytes = 255;

struct SentDestination {
    SubTransactionId subtransaction;
    char destination[max_destination_bytes + 1];  // NUL-terminated: the notification's payload
};

SentDestination* sent = nullptr;  // in TopMemoryContext
int sent_used = 0;
int sent_allocated = 0;
bool callbacks_registered = false;

bool already_sent(const char* destination, std::size_t length) {
    for (int i = 0; i < sent_used; i++) {
        if (std::strlen(sent[i].destination) == length &&
            std::memcmp(sent[i].destination, destination, length) == 0)
            return true;
    }
    return false;
}

void make_room() {
    if (sent_used < sent_allocated) return;
    int wanted = Max(4, sent_allocated * 2);
    auto* grown = static_cast<SentDestination*>(
        MemoryContextAlloc(TopMemoryContext, sizeof(SentDestination) * wanted));
    if (sent != nullptr) {
        std::memcpy(grown, sent, sizeof(SentDestination) * sent_used);
        pfree(sent);
    }
    sent = grown;
    sent_allocated = wanted;
}

// PRE_COMMIT comes before PostgreSQL queues the transaction's notifications, which it delivers
// at the commit; a PREPARE, a commit's end and a rollback forget what was sent.
void on_transaction_end(XactEvent event, void*) {
    if (event == XACT_EVENT_PRE_COMMIT) {
        for (int i = 0; i < sent_used; i++) Async_Notify("inbox_outbox", sent[i].destination);
        sent_used = 0;
    } else if (event != XACT_EVENT_PARALLEL_PRE_COMMIT) {
        sent_used = 0;
    }
}

// A released savepoint hands its destinations to its parent; one rolled back forgets them.
void on_subtransaction_end(SubXactEvent event, SubTransactionId subtransaction,
                           SubTransactionId parent, void*) {
    if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB) return;
    int first = sent_used;
    while (first > 0 && sent[first - 1].subtransaction == subtransaction) first--;
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        sent_used = first;
    } else {
        for (int i = first; i < sent_used; i++) sent[i].subtransaction = parent;
    }
}

}  // namespace

void notify_at_commit(const text* destination) {
    std::size_t length = VARSIZE_ANY_EXHDR(destination);
    Assert(length > 0 && length <= max_destination_bytes);  // the send validated it
    if (already_sent(VARDATA_ANY(destination), length)) return;
    if (!callbacks_registered) {
        RegisterXactCallback(on_transaction_end, nullptr);
        RegisterSubXactCallback(on_subtransaction_end, nullptr);
        callbacks_registered = true;
    }
    make_room();
    SentDestination& entry = sent[sent_used++];
    entry.subtransaction = GetCurrentSubTransactionId();
    std::memcpy(entry.destination, VARDATA_ANY(destination), length);
    entry.destination[length] = '\0';
}
