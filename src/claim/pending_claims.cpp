// See pending_claims.hpp. Entries of a subtransaction always form the tail of their array: an
// inner subtransaction ends (merged into its parent or dropped) before its parent can claim
// again.
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include <climits>
#include <cstring>

#include "claim/pending_claims.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"
#include "stats/attempts_table.hpp"
#include "stats/stats_table.hpp"

namespace {

// Applied claims of one consumer within one subtransaction, not yet committed.
struct PendingApplied {
    SubTransactionId subtransaction;
    std::size_t consumer_len;
    char consumer[inbox::max_consumer_bytes];
    int64 count;
};

// A message claimed within one subtransaction, whose attempt is not decided yet.
struct PendingAttempt {
    SubTransactionId subtransaction;
    AttemptKey key;
    int sqlstate;  // of the handler's error, 0 when none was seen
    char message[attempt_message_bytes];
};

// Claims per transaction whose attempts are followed (about 300 kB of backend memory). Beyond,
// only messages that already failed are: their count must go when they are processed.
constexpr int max_tracked_attempts = 1000;

template <typename Entry>
struct PendingArray {
    Entry* entries;
    int used;
    int allocated;
};

PendingArray<PendingApplied> applied = {nullptr, 0, 0};
PendingArray<PendingAttempt> attempts = {nullptr, 0, 0};
bool callbacks_registered = false;

// Room for one more entry; false when memory is short (the claim is then not followed: the hot
// path stays free of errors).
template <typename Entry>
bool make_room(PendingArray<Entry>* array, int limit) {
    if (array->used < array->allocated) return true;
    if (array->allocated >= limit) return false;
    int wanted = Min(limit, Max(8, array->allocated * 2));
    void* grown =
        MemoryContextAllocExtended(TopMemoryContext, sizeof(Entry) * wanted, MCXT_ALLOC_NO_OOM);
    if (grown == nullptr) return false;
    if (array->entries != nullptr) {
        std::memcpy(grown, array->entries, sizeof(Entry) * array->used);
        pfree(array->entries);
    }
    array->entries = static_cast<Entry*>(grown);
    array->allocated = wanted;
    return true;
}

// The first entry of the array's tail that belongs to `subtransaction`.
template <typename Entry>
int tail_start(const PendingArray<Entry>& array, SubTransactionId subtransaction) {
    int first = array.used;
    while (first > 0 && array.entries[first - 1].subtransaction == subtransaction) first--;
    return first;
}

bool same_consumer(const PendingApplied& entry, const char* consumer, std::size_t len) {
    return entry.consumer_len == len && std::memcmp(entry.consumer, consumer, len) == 0;
}

PendingApplied* find_applied(SubTransactionId subtransaction, const char* consumer, std::size_t len,
                             int limit) {
    for (int i = limit - 1; i >= 0; i--) {
        if (applied.entries[i].subtransaction == subtransaction &&
            same_consumer(applied.entries[i], consumer, len))
            return &applied.entries[i];
    }
    return nullptr;
}

void fail_attempts_from(int first) {
    for (int i = first; i < attempts.used; i++) {
        const PendingAttempt& attempt = attempts.entries[i];
        attempts_add_failure(attempt.key, attempt.sqlstate,
                             attempt.message[0] != '\0' ? attempt.message : nullptr);
    }
    attempts.used = first;
}

void end_top_transaction(bool committed) {
    if (committed) {
        for (int i = 0; i < applied.used; i++) {
            StatsCounters delta{};
            delta.applied = applied.entries[i].count;
            stats_table_add(MyDatabaseId, applied.entries[i].consumer,
                            applied.entries[i].consumer_len, delta);
        }
        for (int i = 0; i < attempts.used; i++) attempts_forget(attempts.entries[i].key);
        attempts.used = 0;
    } else {
        fail_attempts_from(0);
    }
    applied.used = 0;
}

// A prepared transaction's claims count when it is prepared: its backend's pending state ends
// there, and COMMIT PREPARED may run anywhere, much later.
void on_transaction_end(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT:
        case XACT_EVENT_PARALLEL_COMMIT:
        case XACT_EVENT_PREPARE:
            end_top_transaction(true);
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PARALLEL_ABORT:
            end_top_transaction(false);
            break;
        default:
            break;
    }
}

void merge_applied_into(SubTransactionId parent, int first) {
    int kept = first;
    for (int i = first; i < applied.used; i++) {
        PendingApplied* into = find_applied(parent, applied.entries[i].consumer,
                                            applied.entries[i].consumer_len, first);
        if (into != nullptr) {
            into->count += applied.entries[i].count;
        } else {
            applied.entries[kept] = applied.entries[i];
            applied.entries[kept].subtransaction = parent;
            kept++;
        }
    }
    applied.used = kept;
}

void on_subtransaction_end(SubXactEvent event, SubTransactionId subtransaction,
                           SubTransactionId parent, void*) {
    int first_applied = tail_start(applied, subtransaction);
    int first_attempt = tail_start(attempts, subtransaction);
    if (event == SUBXACT_EVENT_ABORT_SUB) {
        applied.used = first_applied;
        fail_attempts_from(first_attempt);
    } else if (event == SUBXACT_EVENT_COMMIT_SUB) {
        merge_applied_into(parent, first_applied);
        for (int i = first_attempt; i < attempts.used; i++)
            attempts.entries[i].subtransaction = parent;
    }
}

void register_callbacks() {
    if (callbacks_registered) return;
    RegisterXactCallback(on_transaction_end, nullptr);
    RegisterSubXactCallback(on_subtransaction_end, nullptr);
    callbacks_registered = true;
}

void add_applied(const char* consumer, std::size_t len, int64 count) {
    SubTransactionId subtransaction = GetCurrentSubTransactionId();
    PendingApplied* entry = find_applied(subtransaction, consumer, len, applied.used);
    if (entry != nullptr) {
        entry->count += count;
        return;
    }
    if (!make_room(&applied, INT_MAX)) return;  // memory short: the claim is not counted
    register_callbacks();
    entry = &applied.entries[applied.used++];
    entry->subtransaction = subtransaction;
    entry->consumer_len = len;
    std::memcpy(entry->consumer, consumer, len);
    entry->count = count;
}

void add_to_shared(text* consumer, const StatsCounters& delta) {
    std::size_t len = VARSIZE_ANY_EXHDR(consumer);
    Assert(len > 0 && len <= inbox::max_consumer_bytes);  // the claim validated its key
    stats_table_add(MyDatabaseId, VARDATA_ANY(consumer), len, delta);
}

bool counting() {
    return track_stats && stats_table_available();
}

// The error's SQLSTATE and its message, cut at a character boundary to fit.
void copy_cause(const ErrorData* error, int* sqlstate, char* message) {
    *sqlstate = error->sqlerrcode;
    const char* text = error->message != nullptr ? error->message : "";
    int length = pg_mbcliplen(text, static_cast<int>(strlen(text)), attempt_message_bytes - 1);
    std::memcpy(message, text, length);
    message[length] = '\0';
}

// The latest pending attempt of `key`, or nullptr. Keys are compared as bytes, as the shared
// table hashes them: make_attempt_key zeroes every byte it does not set, padding included.
PendingAttempt* find_attempt(const AttemptKey& key) {
    for (int i = attempts.used - 1; i >= 0; i--)
        // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
        if (std::memcmp(&attempts.entries[i].key, &key, sizeof(key)) == 0)
            return &attempts.entries[i];
    return nullptr;
}

}  // namespace

bool count_claim(text* consumer, bool inserted) {
    count_claims(consumer, inserted ? 1 : 0, inserted ? 0 : 1);
    return inserted;
}

void count_claims(text* consumer, int64 inserted, int64 duplicates) {
    if (!counting()) return;
    if (inserted > 0) add_applied(VARDATA_ANY(consumer), VARSIZE_ANY_EXHDR(consumer), inserted);
    if (duplicates > 0) {
        StatsCounters delta{};
        delta.duplicates = duplicates;
        delta.last_duplicate_at = GetCurrentTimestamp();
        add_to_shared(consumer, delta);
    }
}

void count_answer(text* consumer, Answer answer) {
    if (!counting()) return;
    StatsCounters delta{};
    switch (answer) {
        case Answer::in_progress:
            delta.in_progress = 1;
            break;
        case Answer::payload_mismatch:
            delta.payload_mismatches = 1;
            break;
        case Answer::poisoned:
            delta.poisoned = 1;
            break;
    }
    add_to_shared(consumer, delta);
}

void track_attempt(const AttemptKey& claimed) {
    int limit = attempts.used < max_tracked_attempts || attempts_failures(claimed) == 0
                    ? max_tracked_attempts
                    : INT_MAX;
    if (!make_room(&attempts, limit)) return;
    register_callbacks();
    PendingAttempt* attempt = &attempts.entries[attempts.used++];
    attempt->subtransaction = GetCurrentSubTransactionId();
    attempt->key = claimed;
    attempt->sqlstate = 0;
    attempt->message[0] = '\0';
}

void note_failure_cause(const AttemptKey& claimed, const ErrorData* error) {
    PendingAttempt* attempt = find_attempt(claimed);
    if (attempt != nullptr) copy_cause(error, &attempt->sqlstate, attempt->message);
}

void fail_attempt_now(const AttemptKey& failed, const ErrorData* error) {
    PendingAttempt* attempt = find_attempt(failed);
    if (attempt != nullptr) {
        int after = static_cast<int>(attempts.entries + attempts.used - (attempt + 1));
        std::memmove(attempt, attempt + 1, sizeof(PendingAttempt) * after);
        attempts.used--;
    }
    int sqlstate = 0;
    char message[attempt_message_bytes];
    copy_cause(error, &sqlstate, message);
    attempts_add_failure(failed, sqlstate, message);
}
