// See commit_notification.hpp. The destinations of a transaction form an array in the order of
// their first sends, each entry stamped with the subtransaction that made it. Entries of a
// subtransaction form the tail of the array (an inner subtransaction ends, merged into its
// parent or dropped, before its parent can send again), and every entry's subtransaction is the
// current one or one of its parents: a destination already there needs no second entry.
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "commands/async.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
}

#include <cstring>

#include "outbox/commit_notification.hpp"
#include "pg/compat.hpp"
#include "store/outbox_insert.hpp"

namespace {

struct SentDestination {
    SubTransactionId subtransaction;
    char destination[max_outbox_name_bytes + 1];  // NUL-terminated: the notification's payload
};

SentDestination* sent = nullptr;  // in TopMemoryContext
int sent_used = 0;
int sent_allocated = 0;
bool callbacks_registered = false;

// Beyond this many destinations a hash table says whether one is there already, as PostgreSQL's
// NOTIFY does beyond 16: a transaction may send to thousands.
constexpr int indexed_from = 16;
constexpr long index_size = 64;  // entries it has room for before it grows
// The destinations of `sent`, in TopTransactionContext; none before indexed_from of them.
HTAB* destination_index = nullptr;

void add_to_index(const char* destination) {
    bool found;
    hash_search(destination_index, destination, HASH_ENTER, &found);
}

void build_index() {
    HASHCTL control = {};
    control.keysize = max_outbox_name_bytes + 1;
    control.entrysize = max_outbox_name_bytes + 1;
    control.hcxt = TopTransactionContext;
    destination_index = hash_create("inbox sent destinations", index_size, &control,
                                    HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
    for (int i = 0; i < sent_used; i++) add_to_index(sent[i].destination);
}

bool already_sent(const char* destination) {
    if (destination_index != nullptr)
        return hash_search(destination_index, destination, HASH_FIND, nullptr) != nullptr;
    for (int i = 0; i < sent_used; i++) {
        if (std::strcmp(sent[i].destination, destination) == 0) return true;
    }
    return false;
}

void forget_all() {
    sent_used = 0;
    destination_index = nullptr;  // freed with the transaction's memory
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
        forget_all();
    } else if (event != XACT_EVENT_PARALLEL_PRE_COMMIT) {
        forget_all();
    }
}

// A released savepoint hands its destinations to its parent; one rolled back forgets them.
void on_subtransaction_end(SubXactEvent event, SubTransactionId subtransaction,
                           SubTransactionId parent, void*) {
    if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB) return;
    int first = sent_used;
    while (first > 0 && sent[first - 1].subtransaction == subtransaction) first--;
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        for (int i = first; destination_index != nullptr && i < sent_used; i++)
            hash_search(destination_index, sent[i].destination, HASH_REMOVE, nullptr);
        sent_used = first;
    } else {
        for (int i = first; i < sent_used; i++) sent[i].subtransaction = parent;
    }
}

}  // namespace

void notify_at_commit(const text* destination) {
    std::size_t length = VARSIZE_ANY_EXHDR(destination);
    // the send validated it
    Assert(length > 0 && length <= static_cast<std::size_t>(max_outbox_name_bytes));
    char name[max_outbox_name_bytes + 1];
    std::memcpy(name, VARDATA_ANY(destination), length);
    name[length] = '\0';
    if (already_sent(name)) return;
    if (!callbacks_registered) {
        RegisterXactCallback(on_transaction_end, nullptr);
        RegisterSubXactCallback(on_subtransaction_end, nullptr);
        callbacks_registered = true;
    }
    make_room();
    SentDestination& entry = sent[sent_used++];
    entry.subtransaction = GetCurrentSubTransactionId();
    std::memcpy(entry.destination, name, length + 1);
    if (destination_index != nullptr) {
        add_to_index(name);
    } else if (sent_used >= indexed_from) {
        build_index();
    }
}
