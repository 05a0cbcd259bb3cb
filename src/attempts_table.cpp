// See attempts_table.hpp. Built like the counters (stats_table.cpp): a shared hash under one
// LWLock of a named tranche, taken exclusively only to change it; an atomic count of entries
// lets the hot path skip the table while no message has failed.
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
#include "utils/timestamp.h"
}

#include <cstring>

#include "attempts_table.hpp"
#include "pg/palloc_elements.hpp"
#include "pg/shared_memory.hpp"
#include "pg/state_file.hpp"
#include "settings.hpp"

namespace {

constexpr const char* segment_name = "inbox_attempts";
#define ATTEMPTS_FILE PGSTAT_STAT_PERMANENT_DIRECTORY "/inbox_attempts.stat"
constexpr uint32 attempts_file_magic = 0x494e4241;  // "INBA"
constexpr uint32 attempts_file_version = 1;

struct AttemptEntry {
    AttemptKey key;  // first: the hash key
    int32 failures;
    int sqlstate;  // of the last failure, 0 when unknown
    TimestampTz last_failed_at;
    char last_message[160];  // "" when unknown
};

struct AttemptsShared {
    LWLock* lock;
    pg_atomic_uint32 entries;
};

AttemptsShared* shared = nullptr;
HTAB* table = nullptr;

Size segment_size() {
    return add_size(MAXALIGN(sizeof(AttemptsShared)),
                    hash_estimate_size(attempts_max_messages, sizeof(AttemptEntry)));
}

// With the lock held exclusively: room for one more entry, forgetting the entry whose last
// failure is the oldest when the table is full.
void make_room() {
    if (hash_get_num_entries(table) < attempts_max_messages) return;
    AttemptEntry* oldest = nullptr;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<AttemptEntry*>(hash_seq_search(&scan)))
        if (oldest == nullptr || entry->last_failed_at < oldest->last_failed_at) oldest = entry;
    if (oldest == nullptr) return;
    hash_search(table, &oldest->key, HASH_REMOVE, nullptr);
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
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<AttemptEntry*>(hash_seq_search(&scan)))
        pg::write_state(&writer, entry, sizeof(*entry));
    pg::finish_state_file(&writer);
}

void load_attempts() {
    uint32 version = 0;
    FILE* file = pg::open_state_file(ATTEMPTS_FILE, attempts_file_magic, &version);
    if (file == nullptr) return;
    int32 count = 0;
    bool ok = version == attempts_file_version && pg::read_state(file, &count, sizeof(count));
    for (int32 i = 0; ok && i < count; i++) {
        AttemptEntry saved;
        ok = pg::read_state(file, &saved, sizeof(saved));
        if (!ok) break;
        make_room();  // a lowered inbox.max_failed_messages keeps the latest failures
        auto* entry =
            static_cast<AttemptEntry*>(hash_search(table, &saved.key, HASH_ENTER_NULL, nullptr));
        if (entry != nullptr) *entry = saved;
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
    }
    HASHCTL info;
    info.keysize = sizeof(AttemptKey);
    info.entrysize = sizeof(AttemptEntry);
    table = ShmemInitHash("inbox attempts hash", attempts_max_messages, attempts_max_messages,
                          &info, HASH_ELEM | HASH_BLOBS);
}

void after_startup() {
    on_shmem_exit(save_attempts, (Datum)0);
    load_attempts();
}

constexpr pg::SharedSegment segment = {.name = segment_name,
                                       .size = segment_size,
                                       .lwlocks = 1,
                                       .attach = attach_segment,
                                       .after_startup = after_startup};

}  // namespace

AttemptKey make_attempt_key(Oid database, int16 consumer_id, const std::uint8_t* key,
                            std::size_t length) {
    AttemptKey made;
    std::memset(&made, 0, sizeof(made));
    made.database = database;
    made.consumer_id = consumer_id;
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

void attempts_add_failure(const AttemptKey& key, int sqlstate, const char* message) {
    if (table == nullptr) return;
    TimestampTz now = GetCurrentTimestamp();
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    bool found = false;
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    if (entry == nullptr) {
        make_room();
        entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_ENTER_NULL, &found));
        if (entry != nullptr) entry->failures = 0;
    }
    if (entry != nullptr) {
        entry->failures++;
        entry->sqlstate = sqlstate;
        entry->last_failed_at = now;
        strlcpy(entry->last_message, message != nullptr ? message : "",
                sizeof(entry->last_message));
    }
    count_entries();
    LWLockRelease(shared->lock);
}

int32 attempts_failures(const AttemptKey& key) {
    if (!attempts_any()) return 0;
    LWLockAcquire(shared->lock, LW_SHARED);
    auto* entry = static_cast<AttemptEntry*>(hash_search(table, &key, HASH_FIND, nullptr));
    int32 failures = entry != nullptr ? entry->failures : 0;
    LWLockRelease(shared->lock);
    return failures;
}

void attempts_forget(const AttemptKey& key) {
    if (!attempts_any()) return;
    LWLockAcquire(shared->lock, LW_EXCLUSIVE);
    hash_search(table, &key, HASH_REMOVE, nullptr);
    count_entries();
    LWLockRelease(shared->lock);
}

extern "C" {

// inbox.attempt_entries(): the failures kept for the current database, behind inbox.attempts.
PG_FUNCTION_INFO_V1(inbox_attempt_entries);
PGDLLEXPORT Datum inbox_attempt_entries(PG_FUNCTION_ARGS) {
    InitMaterializedSRF(fcinfo, 0);
    if (!attempts_any()) return (Datum)0;
    auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);

    // Copied under the lock, turned into rows (which allocates) after it.
    LWLockAcquire(shared->lock, LW_SHARED);
    auto count = static_cast<int>(hash_get_num_entries(table));
    auto* copies = pg::palloc_elements<AttemptEntry>(count);
    int copied = 0;
    HASH_SEQ_STATUS scan;
    hash_seq_init(&scan, table);
    while (auto* entry = static_cast<AttemptEntry*>(hash_seq_search(&scan)))
        if (entry->key.database == MyDatabaseId) copies[copied++] = *entry;
    LWLockRelease(shared->lock);

    for (int i = 0; i < copied; i++) {
        const AttemptEntry& entry = copies[i];
        auto* key = static_cast<bytea*>(palloc(VARHDRSZ + entry.key.length));
        SET_VARSIZE(key, VARHDRSZ + entry.key.length);
        std::memcpy(VARDATA(key), entry.key.message_key, entry.key.length);
        Datum values[6] = {Int16GetDatum(entry.key.consumer_id),
                           PointerGetDatum(key),
                           Int32GetDatum(entry.failures),
                           CStringGetTextDatum(unpack_sql_state(entry.sqlstate)),
                           CStringGetTextDatum(entry.last_message),
                           TimestampTzGetDatum(entry.last_failed_at)};
        bool nulls[6] = {false, false, false, entry.sqlstate == 0, entry.last_message[0] == '\0',
                         false};
        tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
    }
    return (Datum)0;
}
}
