// See key_order_lock.hpp.
extern "C" {
#include "postgres.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
}

#include <cstring>

#include "outbox/key_order_lock.hpp"
#include "pg/compat.hpp"
#include "store/outbox_insert.hpp"

namespace {

// The keys this transaction locked (a key of a savepoint rolled back counts still: the outbox's
// lock comes a little earlier), and the outbox's table once it took the SHARE lock.
struct KeysLocked {
    LocalTransactionId transaction;
    int count;
    Oid outbox_locked;  // InvalidOid until then
};
KeysLocked keys_locked = {InvalidLocalTransactionId, 0, InvalidOid};

// pg_advisory_xact_lock(bigint)'s lock on `key`: true when this transaction held it already.
bool lock_advisory(uint64 key) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(key >> 32),
                         static_cast<uint32>(key), 1);
    return LockAcquire(&tag, ExclusiveLock, false, false) == LOCKACQUIRE_ALREADY_HELD;
}

uint64 key_lock(const text* destination, const text* key) {
    int destination_bytes = VARSIZE_ANY_EXHDR(destination);
    int key_bytes = VARSIZE_ANY_EXHDR(key);
    char name[16 + 2 * max_outbox_name_bytes];
    // The destination's length in decimal, as octet_length(destination)::text writes it (a
    // snprintf cost a send 800 instructions).
    int length = pg_ultoa_n(static_cast<uint32>(destination_bytes), name);
    name[length++] = ':';
    std::memcpy(name + length, VARDATA_ANY(destination), destination_bytes);
    length += destination_bytes;
    std::memcpy(name + length, VARDATA_ANY(key), key_bytes);
    length += key_bytes;
    return DatumGetUInt64(
        hash_any_extended(reinterpret_cast<const unsigned char*>(name), length, 7172693807));
}

// Whether the outbox is this transaction's alone: locked in SHARE mode, and not released since
// by the rollback of the savepoint that took the lock.
bool outbox_locked() {
    return OidIsValid(keys_locked.outbox_locked) &&
           CheckRelationOidLockedByMe(keys_locked.outbox_locked, ShareLock, true);
}

}  // namespace

void lock_key_order(const text* destination, const text* key) {
    LocalTransactionId transaction = pg::local_transaction_id();
    if (keys_locked.transaction != transaction) keys_locked = {transaction, 0, InvalidOid};
    if (keys_locked.count >= max_locks_per_xact) {
        if (outbox_locked()) return;
        // Waits for the senders and relays that write there now; a deadlock with one of them
        // that waits for a key of this transaction is broken by PostgreSQL (40P01).
        Oid outbox = outbox_messages_table();
        if (OidIsValid(outbox)) {
            LockRelationOid(outbox, ShareLock);
            keys_locked.outbox_locked = outbox;
            return;
        }
    }
    if (!lock_advisory(key_lock(destination, key))) keys_locked.count++;
}
