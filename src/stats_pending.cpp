// The per-backend half of the claim counters. A claim that inserted a marker is only pending
// until its transaction commits: it is kept here per subtransaction, dropped when that
// subtransaction or the transaction rolls back, and published to the shared table at commit.
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "settings.hpp"
#include "stats_pending.hpp"
#include "stats_table.hpp"

namespace {

// Applied claims of one consumer within one subtransaction, not yet committed.
struct PendingApplied {
    SubTransactionId subtransaction;
    std::size_t consumer_len;
    char consumer[inbox::max_consumer_bytes];
    int64 count;
};

// Entries of a subtransaction always form the tail of the array: an inner subtransaction ends
// (merged into its parent or dropped) before its parent can claim again.
PendingApplied* pending = nullptr;
int pending_used = 0;
int pending_allocated = 0;
bool callbacks_registered = false;

bool same_consumer(const PendingApplied& entry, const char* consumer, std::size_t len) {
    return entry.consumer_len == len && std::memcmp(entry.consumer, consumer, len) == 0;
}

PendingApplied* find_pending(SubTransactionId subtransaction, const char* consumer, std::size_t len,
                             int limit) {
    for (int i = limit - 1; i >= 0; i--) {
        if (pending[i].subtransaction == subtransaction && same_consumer(pending[i], consumer, len))
            return &pending[i];
    }
    return nullptr;
}

void publish_pending() {
    for (int i = 0; i < pending_used; i++)
        stats_table_add(MyDatabaseId, pending[i].consumer, pending[i].consumer_len,
                        StatsCounters{pending[i].count, 0, 0});
    pending_used = 0;
}

// A prepared transaction's claims count when it is prepared: its backend's pending state ends
// there, and COMMIT PREPARED may run anywhere, much later.
void on_transaction_end(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PREPARE:
            publish_pending();
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            pending_used = 0;
            break;
        default:
            break;
    }
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId subtransaction,
                           SubTransactionId parent, void*) {
    int first = pending_used;
    while (first > 0 && pending[first - 1].subtransaction == subtransaction) first--;
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        pending_used = first;
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        int kept = first;
        for (int i = first; i < pending_used; i++) {
            PendingApplied* into =
                find_pending(parent, pending[i].consumer, pending[i].consumer_len, first);
            if (into != nullptr) {
                into->count += pending[i].count;
            } else {
                pending[kept] = pending[i];
                pending[kept].subtransaction = parent;
                kept++;
            }
        }
        pending_used = kept;
    }
}

void add_pending(const char* consumer, std::size_t len) {
    SubTransactionId subtransaction = GetCurrentSubTransactionId();
    PendingApplied* entry = find_pending(subtransaction, consumer, len, pending_used);
    if (entry != nullptr) {
        entry->count++;
        return;
    }
    if (pending_used == pending_allocated) {
        // Rare: a transaction claiming for many consumers. MemoryContextAllocExtended with
        // MCXT_ALLOC_NO_OOM keeps the hot path free of errors; the claim is not counted.
        int wanted = Max(8, pending_allocated * 2);
        void* grown = MemoryContextAllocExtended(TopMemoryContext, sizeof(PendingApplied) * wanted,
                                                 MCXT_ALLOC_NO_OOM);
        if (grown == nullptr) return;
        if (pending != nullptr) {
            std::memcpy(grown, pending, sizeof(PendingApplied) * pending_used);
            pfree(pending);
        }
        pending = static_cast<PendingApplied*>(grown);
        pending_allocated = wanted;
    }
    if (!callbacks_registered) {
        RegisterXactCallback(on_transaction_end, nullptr);
        RegisterSubXactCallback(on_subtransaction_end, nullptr);
        callbacks_registered = true;
    }
    entry = &pending[pending_used++];
    entry->subtransaction = subtransaction;
    entry->consumer_len = len;
    std::memcpy(entry->consumer, consumer, len);
    entry->count = 1;
}

}  // namespace

bool count_claim(text* consumer, bool inserted) {
    if (!track_stats || !stats_table_available()) return inserted;
    std::size_t len = VARSIZE_ANY_EXHDR(consumer);
    Assert(len > 0 && len <= inbox::max_consumer_bytes);  // the claim validated its key
    if (inserted)
        add_pending(VARDATA_ANY(consumer), len);
    else
        stats_table_add(MyDatabaseId, VARDATA_ANY(consumer), len,
                        StatsCounters{0, 1, GetCurrentTimestamp()});
    return inserted;
}
