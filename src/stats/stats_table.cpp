// The shared table of claim counters: shared-memory hooks, entries, and the file that carries
// them across a clean restart. See stats_table.hpp.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/shared_memory.hpp"
#include "pg/state_file.hpp"
#include "settings.hpp"
#include "stats/stats_table.hpp"

namespace {

// Database rows do not count against inbox.max_consumers; this many are sized in, more come
// from the spare shared memory PostgreSQL keeps.
constexpr int reserved_database_rows = 64;

// The segment and its LWLock tranche.
constexpr const char* segment_name = "inbox_stats";

// Written at clean shutdown, read and removed at startup: a crash restart starts from zero.
#define STATS_DUMP_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/inbox_stats.stat"
constexpr uint32 dump_file_magic = 0x494e4253;  // "INBS"
// 2: the outcome counters of 1.1; 3: attempts_evicted (1.3).
constexpr uint32 dump_file_version = 3;

// Zero-padded so that the whole struct can be hashed as bytes.
struct StatsKey {
    Oid database;
    char consumer[inbox::max_consumer_bytes + 1];  // "" for the database row
};

struct StatsEntry {
    StatsKey key;   // first: the hash key
    slock_t mutex;  // protects counters and reset_at
    StatsCounters counters;
    TimestampTz reset_at;  // database row: last inbox.stats_reset(); 0 when never
};

struct StatsShared {
    LWLock* lock;                // shared to find entries, exclusive to add or remove them
    int consumer_entries;        // entries other than database rows
    TimestampTz counting_since;  // when counting began without saved counters
};

// What the dump file holds per entry.
struct DumpedEntry {
    StatsKey key;
    StatsCounters counters;
    TimestampTz reset_at;
};

StatsShared* shared = nullptr;
HTAB* table = nullptr;

StatsKey make_key(Oid database, const char* consumer, std::size_t len) {
    StatsKey key;
    std::memset(&key, 0, sizeof(key));
    key.database = database;
    std::memcpy(key.consumer, consumer, Min(len, inbox::max_consumer_bytes));
    return key;
}

bool is_database_row(const StatsKey& key) {
    return key.consumer[0] == '\0';
}

long table_capacity() {
    return stats_max_consumers + reserved_database_rows;
}

// With the lock held in either mode: the entry that counts the claims of `key` (its own, or its
// database row once the table is full), or nullptr when that entry does not exist yet.
StatsEntry* find_counting_entry(const StatsKey& key) {
    auto* entry = static_cast<StatsEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    if (entry != nullptr || is_database_row(key) || shared->consumer_entries < stats_max_consumers)
        return entry;
    StatsKey database_key = make_key(key.database, "", 0);
    return static_cast<StatsEntry*>(hash_search(table, &database_key, HASH_FIND, nullptr));
}

// With the lock held exclusively (or in the postmaster, alone): finds or creates the counting
// entry. nullptr only when shared memory is exhausted; never an error.
StatsEntry* make_counting_entry(const StatsKey& key) {
    StatsEntry* entry = find_counting_entry(key);
    if (entry != nullptr) return entry;

    bool table_full = shared->consumer_entries >= stats_max_consumers;
    StatsKey target = is_database_row(key) || !table_full ? key : make_key(key.database, "", 0);
    bool found;
    entry = static_cast<StatsEntry*>(hash_search(table, &target, HASH_ENTER_NULL, &found));
    if (entry == nullptr || found) return entry;
    SpinLockInit(&entry->mutex);
    entry->counters = StatsCounters{};
    entry->reset_at = 0;
    if (!is_database_row(target)) shared->consumer_entries++;
    return entry;
}

void add_counters(StatsEntry* entry, const StatsCounters& delta) {
    SpinLockAcquire(&entry->mutex);
    entry->counters.applied += delta.applied;
    entry->counters.duplicates += delta.duplicates;
    entry->counters.in_progress += delta.in_progress;
    entry->counters.payload_mismatches += delta.payload_mismatches;
    entry->counters.poisoned += delta.poisoned;
    entry->counters.attempts_evicted += delta.attempts_evicted;
    if (delta.last_duplicate_at > entry->counters.last_duplicate_at)
        entry->counters.last_duplicate_at = delta.last_duplicate_at;
    SpinLockRelease(&entry->mutex);
}

// Counters of 1.0's library, as its state file holds them.
struct DumpedEntryVersion1 {
    StatsKey key;
    struct {
        int64 applied;
        int64 duplicates;
        TimestampTz last_duplicate_at;
    } counters;
    TimestampTz reset_at;
};

// Counters of the libraries of 1.1 and 1.2, as their state file holds them.
struct DumpedEntryVersion2 {
    StatsKey key;
    struct {
        int64 applied;
        int64 duplicates;
        TimestampTz last_duplicate_at;
        int64 in_progress;
        int64 payload_mismatches;
        int64 poisoned;
    } counters;
    TimestampTz reset_at;
};

void save_counters(int code, Datum) {
    if (code != 0 || table == nullptr) return;  // never after a crash
    pg::StateFileWriter writer;
    if (!pg::begin_state_file(&writer, STATS_DUMP_FILE, dump_file_magic, dump_file_version)) return;
    auto count = static_cast<int32>(hash_get_num_entries(table));  // bounded by max_consumers
    pg::write_state(&writer, &shared->counting_since, sizeof(TimestampTz));
    pg::write_state(&writer, &count, sizeof(int32));
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
        DumpedEntry dumped{
            .key = entry->key, .counters = entry->counters, .reset_at = entry->reset_at};
        pg::write_state(&writer, &dumped, sizeof(dumped));
    }
    pg::finish_state_file(&writer);
}

// One saved entry, of the file's version.
bool read_entry(FILE* file, uint32 version, DumpedEntry* dumped) {
    if (version == dump_file_version) return pg::read_state(file, dumped, sizeof(*dumped));
    if (version == 2) {
        DumpedEntryVersion2 old;
        if (!pg::read_state(file, &old, sizeof(old))) return false;
        *dumped = DumpedEntry{old.key, StatsCounters{}, old.reset_at};
        dumped->counters.applied = old.counters.applied;
        dumped->counters.duplicates = old.counters.duplicates;
        dumped->counters.last_duplicate_at = old.counters.last_duplicate_at;
        dumped->counters.in_progress = old.counters.in_progress;
        dumped->counters.payload_mismatches = old.counters.payload_mismatches;
        dumped->counters.poisoned = old.counters.poisoned;
        return true;
    }
    DumpedEntryVersion1 old;
    if (!pg::read_state(file, &old, sizeof(old))) return false;
    *dumped = DumpedEntry{old.key, StatsCounters{}, old.reset_at};
    dumped->counters.applied = old.counters.applied;
    dumped->counters.duplicates = old.counters.duplicates;
    dumped->counters.last_duplicate_at = old.counters.last_duplicate_at;
    return true;
}

// In the postmaster, before any backend exists. Entries beyond a lowered inbox.max_consumers
// are added to their database row, as new consumers would be. Counters saved by the libraries of
// 1.0 (version 1) and of 1.1 and 1.2 (version 2) are read too, so that a package update keeps
// them.
void load_counters() {
    shared->counting_since = GetCurrentTimestamp();
    uint32 version = 0;
    FILE* file = pg::open_state_file(STATS_DUMP_FILE, dump_file_magic, &version);
    if (file == nullptr) return;
    TimestampTz counting_since = 0;
    int32 count = 0;
    bool ok = version >= 1 && version <= dump_file_version &&
              pg::read_state(file, &counting_since, sizeof(TimestampTz)) &&
              pg::read_state(file, &count, sizeof(int32));
    if (ok) shared->counting_since = counting_since;
    for (int32 i = 0; ok && i < count; i++) {
        DumpedEntry dumped;
        ok = read_entry(file, version, &dumped);
        if (!ok) break;
        StatsEntry* entry = make_counting_entry(dumped.key);
        if (entry == nullptr) continue;
        add_counters(entry, dumped.counters);
        if (is_database_row(entry->key) && is_database_row(dumped.key))
            entry->reset_at = dumped.reset_at;
    }
    pg::close_state_file(file, STATS_DUMP_FILE, ok);
}

Size segment_size() {
    return add_size(MAXALIGN(sizeof(StatsShared)),
                    hash_estimate_size(table_capacity(), sizeof(StatsEntry)));
}

void attach_segment() {
    bool found;
    shared = static_cast<StatsShared*>(ShmemInitStruct(segment_name, sizeof(StatsShared), &found));
    if (!found) {
        shared->lock = &GetNamedLWLockTranche(segment_name)->lock;
        shared->consumer_entries = 0;
        shared->counting_since = 0;
    }
    HASHCTL info;
    info.keysize = sizeof(StatsKey);
    info.entrysize = sizeof(StatsEntry);
    table =
        pg::shmem_init_hash("inbox stats hash", table_capacity(), &info, HASH_ELEM | HASH_BLOBS);
}

constexpr pg::SharedSegment segment = {.name = segment_name,
                                       .size = segment_size,
                                       .lwlocks = 1,
                                       .attach = attach_segment,
                                       .restore = load_counters,
                                       .save = save_counters};

}  // namespace

void request_stats_memory() {
    pg::request_shared_segment(&segment);
}

bool stats_table_available() {
    return table != nullptr;
}

void stats_table_add(Oid database, const char* consumer, std::size_t consumer_len,
                     const StatsCounters& delta) {
    if (table == nullptr) return;
    StatsKey key = make_key(database, consumer, consumer_len);
    LWLockAcquire(shared->lock, LW_SHARED);
    StatsEntry* entry = find_counting_entry(key);
    if (entry == nullptr) {
        LWLockRelease(shared->lock);
        LWLockAcquire(shared->lock, LW_EXCLUSIVE);
        entry = make_counting_entry(key);
    }
    if (entry != nullptr) add_counters(entry, delta);
    LWLockRelease(shared->lock);
}

StatsSnapshot stats_table_snapshot(Oid database) {
    StatsSnapshot snapshot{};
    if (table == nullptr) return snapshot;

    LWLockAcquire(shared->lock, LW_SHARED);
    // Entries are only added under the exclusive lock: the count cannot grow during the scan.
    snapshot.consumers = static_cast<StatsConsumerRow*>(
        palloc(sizeof(StatsConsumerRow) * Max(hash_get_num_entries(table), 1)));
    TimestampTz reset_at = 0;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
        if (entry->key.database != database) continue;
        SpinLockAcquire(&entry->mutex);
        StatsCounters counters = entry->counters;
        if (is_database_row(entry->key)) reset_at = entry->reset_at;
        SpinLockRelease(&entry->mutex);
        if (is_database_row(entry->key)) {
            snapshot.untracked = counters;
        } else {
            StatsConsumerRow* row = &snapshot.consumers[snapshot.consumer_count++];
            std::memcpy(row->consumer, entry->key.consumer, sizeof(row->consumer));
            row->counters = counters;
        }
    }
    snapshot.counting_since = reset_at != 0 ? reset_at : shared->counting_since;
    LWLockRelease(shared->lock);
    return snapshot;
}

void stats_table_reset(Oid database) {
    if (table == nullptr) return;
    TimestampTz now = GetCurrentTimestamp();
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<StatsEntry*>(hash_seq_search(&scan))) {
        if (entry->key.database != database || is_database_row(entry->key)) continue;
        hash_search(table, &entry->key, HASH_REMOVE, nullptr);  // removing the current entry
        shared->consumer_entries--;                             // is allowed during a scan
    }
    StatsEntry* database_row = make_counting_entry(make_key(database, "", 0));
    if (database_row != nullptr) {
        SpinLockAcquire(&database_row->mutex);
        database_row->counters = StatsCounters{};
        database_row->reset_at = now;
        SpinLockRelease(&database_row->mutex);
    }
    LWLockRelease(shared->lock);
}
