// See attempts_table.hpp. Built like the counters (stats_table.cpp): a shared hash under one
// LWLock of a named tranche, taken exclusively only to change it; an atomic count of entries
// lets the hot path skip the table while no message has failed. The entries are also on a list
// from the least to the most recently failed, so that a full table forgets its least recent
// failure at once, whatever its size.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/hsearch.h"
#include "lib/ilist.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/palloc_elements.hpp"
#include "pg/shared_memory.hpp"
#include "pg/state_file.hpp"
#include "settings.hpp"
#include "stats/attempts_table.hpp"

namespace {

constexpr const char* segment_name = "inbox_attempts";
#define ATTEMPTS_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/inbox_attempts.stat"
constexpr uint32 attempts_file_magic = 0x494e4241;  // "INBA"
// 2: the consumer by name and registry (1 knew its id only, and is not read back).
constexpr uint32 attempts_file_version = 2;

struct AttemptEntry {
    AttemptKey key;  // first: the hash key
    dlist_node recency;
    AttemptRecord record;
};

struct AttemptsShared {
    LWLock* lock;
    pg_atomic_uint32 entries;
    dlist_head by_recency;  // every entry, the least recently failed first
};

AttemptsShared* shared = nullptr;
HTAB* table = nullptr;

Size segment_size() {
    return add_size(MAXALIGN(sizeof(AttemptsShared)),
                    hash_estimate_size(attempts_max_messages, sizeof(AttemptEntry)));
}

// The entry of a node of the list (ilist.h's dlist_container is C only).
AttemptEntry* entry_of(dlist_node* node) {
    return reinterpret_cast<AttemptEntry*>(reinterpret_cast<char*>(node) -
                                           offsetof(AttemptEntry, recency));
}

// With the lock held exclusively.
void remove_entry(AttemptEntry* entry) {
    dlist_delete(&entry->recency);
    hash_search(table, &entry->key, HASH_REMOVE, nullptr);
}

// With the lock held exclusively: room for one more entry, forgetting the least recently failed
// message when the table is full.
void make_room() {
    while (hash_get_num_entries(table) >= attempts_max_messages &&
           !dlist_is_empty(&shared->by_recency))
        remove_entry(entry_of(dlist_head_node(&shared->by_recency)));
}

// With the lock held exclusively: the entry of `key`, new (no failure yet) when there was none;
// nullptr when shared memory is short.
AttemptEntry* enter_entry(const AttemptKey& key) {
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    if (entry != nullptr) {
        dlist_delete(&entry->recency);
    } else {
        make_room();
        entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_ENTER_NULL, nullptr));
        if (entry == nullptr) return nullptr;
        entry->record.failures = 0;
    }
    dlist_push_tail(&shared->by_recency, &entry->recency);
    return entry;
}

void count_entries() {
    pg_atomic_write_u32(&shared->entries, static_cast<uint32>(hash_get_num_entries(table)));
}

void save_attempts(int code, Datum) {
    if (code != 0 || table == nullptr) return;  // never after a crash
    pg::StateFileWriter writer;
    if (!pg::begin_state_file(&writer, ATTEMPTS_FILE, attempts_file_magic, attempts_file_version))
        return;
    auto count = static_cast<int32>(hash_get_num_entries(table));
    pg::write_state(&writer, &count, sizeof(count));
    // In the order of the list, which the next start rebuilds by reading them back.
    dlist_head* list = &shared->by_recency;
    for (dlist_node* node = list->head.next; node != &list->head; node = node->next) {
        AttemptEntry* entry = entry_of(node);
        pg::write_state(&writer, &entry->key, sizeof(entry->key));
        pg::write_state(&writer, &entry->record, sizeof(entry->record));
    }
    pg::finish_state_file(&writer);
}

void load_attempts() {
    uint32 version = 0;
    FILE* file = pg::open_state_file(ATTEMPTS_FILE, attempts_file_magic, &version);
    if (file == nullptr) return;
    int32 count = 0;
    bool ok = version == attempts_file_version && pg::read_state(file, &count, sizeof(count));
    for (int32 i = 0; ok && i < count; i++) {
        AttemptKey key;
        AttemptRecord record;
        ok = pg::read_state(file, &key, sizeof(key)) &&
             pg::read_state(file, &record, sizeof(record));
        if (!ok) break;
        // A lowered inbox.max_failed_messages keeps the latest failures.
        AttemptEntry* entry = enter_entry(key);
        if (entry != nullptr) entry->record = record;
    }
    count_entries();
    pg::close_state_file(file, ATTEMPTS_FILE, ok);
}

void attach_segment() {
    bool found;
    shared =
        static_cast<AttemptsShared*>(ShmemInitStruct(segment_name, sizeof(AttemptsShared), &found));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(segment_name)->lock;
        pg_atomic_init_u32(&shared->entries, 0);
        dlist_init(&shared->by_recency);
    }
    HASHCTL info;
    info.keysize = sizeof(AttemptKey);
    info.entrysize = sizeof(AttemptEntry);
    table = pg::shmem_init_hash("inbox attempts hash", attempts_max_messages, &info,
                                HASH_ELEM | HASH_BLOBS);
}

constexpr pg::SharedSegment segment = {.name = segment_name,
                                       .size = segment_size,
                                       .lwlocks = 1,
                                       .attach = attach_segment,
                                       .restore = load_attempts,
                                       .save = save_attempts};

}  // namespace

AttemptKey make_attempt_key(Oid database, Oid registry, const char* consumer,
                            std::size_t consumer_length, const std::uint8_t* key,
                            std::size_t length) {
    AttemptKey made;
    std::memset(&made, 0, sizeof(made));
    made.database = database;
    made.registry = registry;
    made.consumer_length = static_cast<uint8>(consumer_length);
    std::memcpy(made.consumer, consumer, consumer_length);
    made.length = static_cast<uint8>(length);
    std::memcpy(made.message_key, key, length);
    return made;
}

void request_attempts_memory() {
    pg::request_shared_segment(&segment);
}

bool attempts_any() {
    return table != nullptr && pg_atomic_read_u32(&shared->entries) > 0;
}

bool attempts_counted() {
    return table != nullptr;
}

void attempts_add_failure(const AttemptKey& key, int sqlstate, const char* message) {
    if (table == nullptr) return;
    TimestampTz now = GetCurrentTimestamp();
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    AttemptEntry* entry = enter_entry(key);
    if (entry != nullptr) {
        entry->record.failures++;
        entry->record.sqlstate = sqlstate;
        entry->record.last_failed_at = now;
        strlcpy(entry->record.last_message, message != nullptr ? message : "",
                sizeof(entry->record.last_message));
    }
    count_entries();
    LWLockRelease(shared->lock);
}

int32 attempts_failures(const AttemptKey& key) {
    if (!attempts_any()) return 0;
    LWLockAcquire(shared->lock, LW_SHARED);
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    int32 failures = entry != nullptr ? entry->record.failures : 0;
    LWLockRelease(shared->lock);
    return failures;
}

void attempts_forget(const AttemptKey& key) {
    // Every commit of a claim comes here: the exclusive lock only when there is something to
    // forget.
    if (attempts_failures(key) == 0) return;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    if (entry != nullptr) remove_entry(entry);
    count_entries();
    LWLockRelease(shared->lock);
}

KeptAttempt* attempts_kept(Oid database, Oid registry, int* count) {
    *count = 0;
    if (table == nullptr) return nullptr;
    // Copied under the shared lock, as pg_stat_statements reads its own: the caller makes its
    // rows after it.
    LWLockAcquire(shared->lock, LW_SHARED);
    auto* kept = pg::palloc_elements<KeptAttempt>(static_cast<int>(hash_get_num_entries(table)));
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<AttemptEntry*>(hash_seq_search(&scan)))
        if (entry->key.database == database && entry->key.registry == registry)
            kept[(*count)++] = KeptAttempt{.key = entry->key, .record = entry->record};
    LWLockRelease(shared->lock);
    return kept;
}
