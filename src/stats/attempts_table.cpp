// See attempts_table.hpp. Built like the counters (stats_table.cpp): shared hashes under one
// LWLock of a named tranche, taken exclusively only to change them; an atomic count of entries
// lets the hot path skip the table while no message has failed.
//
// A full table shares itself fairly between consumers. Each consumer (database, registry,
// name, as in AttemptKey) with failures has a group: its entry count and its entries from the
// least to the most recently failed. The groups of each size are on a list of their own, and
// the largest size is kept, so that the largest group is found at once. When a consumer needs a
// new entry in a full table, it gives up its own least recent failure if it is at least as large
// as every other group, and the largest group gives up its least recent one otherwise: a
// consumer that holds no more than its fair share (max_failed_messages divided by the consumers
// with failures) never loses a count to another consumer's failures. Each step is constant
// time, whatever the table's size and the number of consumers.
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
#include "stats/stats_table.hpp"

namespace {

constexpr const char* segment_name = "inbox_attempts";
#define ATTEMPTS_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/inbox_attempts.stat"
constexpr uint32 attempts_file_magic = 0x494e4241;  // "INBA"
// 2: the consumer by name and registry (1 knew its id only, and is not read back).
constexpr uint32 attempts_file_version = 2;

struct AttemptEntry {
    AttemptKey key;      // first: the hash key
    dlist_node recency;  // on its group's list
    AttemptRecord record;
};

// The consumer of AttemptKey alone, zero-padded like it.
struct GroupKey {
    Oid database;
    Oid registry;
    uint8 consumer_length;
    char consumer[inbox::max_consumer_bytes];
};

// A consumer's entries.
struct AttemptGroup {
    GroupKey key;           // first: the hash key
    int32 entries;          // how many; a group without entries is removed
    dlist_head by_recency;  // its entries, the least recently failed first
    dlist_node by_size;     // on the list of the groups of its size
};

struct AttemptsShared {
    LWLock* lock;
    pg_atomic_uint32 entries;
    int32 largest;               // the entries of the largest group, 0 when there is none
    dlist_head* groups_of_size;  // [0 .. max_failed_messages]: the groups of each size
};

AttemptsShared* shared = nullptr;
HTAB* table = nullptr;
HTAB* groups = nullptr;

// Sizes 0 .. max_failed_messages (a group never holds more than the table).
Size size_lists_bytes() {
    return mul_size(static_cast<Size>(attempts_max_messages) + 1, sizeof(dlist_head));
}

// Every consumer may have a group: as many groups as entries.
Size segment_size() {
    Size size = add_size(MAXALIGN(sizeof(AttemptsShared)), MAXALIGN(size_lists_bytes()));
    size = add_size(size, hash_estimate_size(attempts_max_messages, sizeof(AttemptEntry)));
    return add_size(size, hash_estimate_size(attempts_max_messages, sizeof(AttemptGroup)));
}

// The entry of a node of a group's list, the group of a node of a size list (ilist.h's
// dlist_container is C only).
AttemptEntry* entry_of(dlist_node* node) {
    return reinterpret_cast<AttemptEntry*>(reinterpret_cast<char*>(node) -
                                           offsetof(AttemptEntry, recency));
}

AttemptGroup* group_of(dlist_node* node) {
    return reinterpret_cast<AttemptGroup*>(reinterpret_cast<char*>(node) -
                                           offsetof(AttemptGroup, by_size));
}

GroupKey group_key(const AttemptKey& key) {
    GroupKey made;
    std::memset(&made, 0, sizeof(made));
    made.database = key.database;
    made.registry = key.registry;
    made.consumer_length = key.consumer_length;
    std::memcpy(made.consumer, key.consumer, key.consumer_length);
    return made;
}

AttemptGroup* find_group(const GroupKey& key) {
    return static_cast<AttemptGroup*>(hash_search(groups, &key, HASH_FIND, nullptr));
}

// With the lock held exclusively: the group has one entry more or one less (`change`), and
// moves to the list of its new size; a group left without entries goes.
void resize_group(AttemptGroup* group, int32 change) {
    if (group->entries > 0) dlist_delete(&group->by_size);
    group->entries += change;
    if (group->entries > 0)
        dlist_push_head(&shared->groups_of_size[group->entries], &group->by_size);
    if (group->entries > shared->largest) shared->largest = group->entries;
    while (shared->largest > 0 && dlist_is_empty(&shared->groups_of_size[shared->largest]))
        shared->largest--;  // once at most: sizes change by one
    if (group->entries == 0) hash_search(groups, &group->key, HASH_REMOVE, nullptr);
}

// With the lock held exclusively.
void remove_entry(AttemptEntry* entry, AttemptGroup* group) {
    dlist_delete(&entry->recency);
    hash_search(table, &entry->key, HASH_REMOVE, nullptr);
    resize_group(group, -1);
}

// With the lock held exclusively: room for one more entry of `needing`'s consumer. When the table
// is full, the least recent failure of the consumer itself goes if its group is the largest (or
// as large), of the largest group otherwise; *evicted_from says whose it was. Every new entry
// comes here, so that the table never holds more than max_failed_messages: one eviction at most.
bool make_room(const AttemptKey& needing, GroupKey* evicted_from) {
    if (hash_get_num_entries(table) < attempts_max_messages || shared->largest == 0) return false;
    AttemptGroup* victim = find_group(group_key(needing));
    if (victim == nullptr || victim->entries < shared->largest)
        victim = group_of(dlist_head_node(&shared->groups_of_size[shared->largest]));
    *evicted_from = victim->key;
    remove_entry(entry_of(dlist_head_node(&victim->by_recency)), victim);
    return true;
}

// With the lock held exclusively: the entry of `key`, new (no failure yet) when there was none;
// nullptr when shared memory is short. *evicted says whether another entry went to make room,
// and *evicted_from whose.
AttemptEntry* enter_entry(const AttemptKey& key, bool* evicted, GroupKey* evicted_from) {
    *evicted = false;
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    if (entry != nullptr) {
        // Its group's list: the most recent failure last.
        AttemptGroup* group = find_group(group_key(key));
        dlist_move_tail(&group->by_recency, &entry->recency);
        return entry;
    }
    *evicted = make_room(key, evicted_from);
    GroupKey consumer = group_key(key);
    bool found;
    auto* group =
        static_cast<AttemptGroup*>(hash_search(groups, &consumer, HASH_ENTER_NULL, &found));
    if (group == nullptr) return nullptr;
    if (!found) {
        group->entries = 0;
        dlist_init(&group->by_recency);
    }
    entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_ENTER_NULL, nullptr));
    if (entry == nullptr) {
        if (group->entries == 0) hash_search(groups, &consumer, HASH_REMOVE, nullptr);
        return nullptr;
    }
    entry->record.failures = 0;
    dlist_push_tail(&group->by_recency, &entry->recency);
    resize_group(group, 1);
    return entry;
}

// Without the attempts lock (the counters take their own): an eviction counts against the
// consumer that lost its count, in its database's inbox.stats. Never raises an error.
void count_eviction(const GroupKey& consumer) {
    if (!track_stats) return;
    StatsCounters delta{};
    delta.attempts_evicted = 1;
    stats_table_add(consumer.database, consumer.consumer, consumer.consumer_length, delta);
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
    // Consumer by consumer, each in the order of its list, which the next start rebuilds by
    // reading them back.
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, groups);
    while (auto* group = static_cast<AttemptGroup*>(hash_seq_search(&scan))) {
        dlist_head* list = &group->by_recency;
        for (dlist_node* node = list->head.next; node != &list->head; node = node->next) {
            AttemptEntry* entry = entry_of(node);
            pg::write_state(&writer, &entry->key, sizeof(entry->key));
            pg::write_state(&writer, &entry->record, sizeof(entry->record));
        }
    }
    pg::finish_state_file(&writer);
}

// In the postmaster, once the counters are restored (their segment is requested first). A
// file of the previous library (one list of every consumer's entries) is read alike.
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
        // A lowered inbox.max_failed_messages keeps each consumer's latest failures, shared as
        // new failures share the table, and counts what it forgets.
        bool evicted;
        GroupKey evicted_from;
        AttemptEntry* entry = enter_entry(key, &evicted, &evicted_from);
        if (entry != nullptr) entry->record = record;
        if (evicted) count_eviction(evicted_from);
    }
    count_entries();
    pg::close_state_file(file, ATTEMPTS_FILE, ok);
}

void attach_segment() {
    bool found;
    Size header = MAXALIGN(sizeof(AttemptsShared));
    shared = static_cast<AttemptsShared*>(
        ShmemInitStruct(segment_name, add_size(header, size_lists_bytes()), &found));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(segment_name)->lock;
        pg_atomic_init_u32(&shared->entries, 0);
        shared->largest = 0;
        shared->groups_of_size =
            reinterpret_cast<dlist_head*>(reinterpret_cast<char*>(shared) + header);
        for (int size = 0; size <= attempts_max_messages; size++)
            dlist_init(&shared->groups_of_size[size]);
    }
    HASHCTL info;
    info.keysize = sizeof(AttemptKey);
    info.entrysize = sizeof(AttemptEntry);
    table = pg::shmem_init_hash("inbox attempts hash", attempts_max_messages, &info,
                                HASH_ELEM | HASH_BLOBS);
    HASHCTL group_info;
    group_info.keysize = sizeof(GroupKey);
    group_info.entrysize = sizeof(AttemptGroup);
    groups = pg::shmem_init_hash("inbox attempt groups hash", attempts_max_messages, &group_info,
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
    bool evicted;
    GroupKey evicted_from;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    AttemptEntry* entry = enter_entry(key, &evicted, &evicted_from);
    if (entry != nullptr) {
        entry->record.failures++;
        entry->record.sqlstate = sqlstate;
        entry->record.last_failed_at = now;
        strlcpy(entry->record.last_message, message != nullptr ? message : "",
                sizeof(entry->record.last_message));
    }
    count_entries();
    LWLockRelease(shared->lock);
    if (evicted) count_eviction(evicted_from);
}

int32 attempts_failures(const AttemptKey& key) {
    if (!attempts_any()) return 0;
    LWLockAcquire(shared->lock, LW_SHARED);
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    int32 failures = entry != nullptr ? entry->record.failures : 0;
    LWLockRelease(shared->lock);
    return failures;
}

int32 attempts_forget(const AttemptKey& key) {
    // Every commit of a claim comes here: the exclusive lock only when there is something to
    // forget.
    if (attempts_failures(key) == 0) return 0;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    int32 failures = 0;
    if (entry != nullptr) {
        failures = entry->record.failures;
        remove_entry(entry, find_group(group_key(key)));
    }
    count_entries();
    LWLockRelease(shared->lock);
    return failures;
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
