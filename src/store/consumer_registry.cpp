// See consumer_registry.hpp: finding a consumer, configuring it, and inbox.consumer_id.
//
// The cache maps names to ids for the backend's life. An id never changes for a name (the
// registry refuses renames and removals), so the cache is dropped only when the registry table
// itself changes (relcache invalidation: TRUNCATE, DROP EXTENSION, a restore). Only committed
// registrations are cached: a rollback takes an uncommitted one back, and its id goes to the
// next registration. The registry is read with a snapshot taken at the lookup, so that a
// consumer registered since this transaction's snapshot is found, not registered again.
extern "C" {
#include "postgres.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/spi.hpp"
#include "store/consumer_registration.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_table.hpp"
#include "store/message_key.hpp"

namespace {

// Zero-padded, so that the key hashes as bytes.
struct CachedName {
    char name[inbox::max_consumer_bytes];
};

struct CachedConsumer {
    CachedName key;
    Consumer consumer;
};

HTAB* cache = nullptr;
Oid cached_for_registry = InvalidOid;

void forget_consumers(Datum, Oid relid) {
    if (cache != nullptr && (relid == InvalidOid || relid == cached_for_registry)) {
        hash_destroy(cache);
        cache = nullptr;
    }
}

HTAB* consumer_cache() {
    static bool callback_registered = false;
    if (!callback_registered) {
        CacheRegisterRelcacheCallback(forget_consumers, (Datum)0);
        callback_registered = true;
    }
    Oid registry = marker_store()->registry;
    if (cache != nullptr && cached_for_registry == registry) return cache;
    if (cache != nullptr) hash_destroy(cache);
    HASHCTL control;
    control.keysize = sizeof(CachedName);
    control.entrysize = sizeof(CachedConsumer);
    control.hcxt = TopMemoryContext;
    cache = hash_create("inbox consumer ids", 64, &control, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
    cached_for_registry = registry;
    return cache;
}

MarkerStatement find_consumer_row = {
    .sql =
        "SELECT id, xmin, max_attempts FROM inbox.consumer_registry "
        "WHERE name OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\"",
    .nargs = 1,
    .argtypes = {TEXTOID},
    .plan = nullptr};

// The consumer in the first row of the last statement; *committed is false when this
// transaction wrote the row.
bool read_consumer(Consumer* found, bool* committed) {
    if (SPI_processed == 0) return false;
    bool isnull = false;
    HeapTuple row = SPI_tuptable->vals[0];
    found->id = DatumGetInt16(SPI_getbinval(row, SPI_tuptable->tupdesc, 1, &isnull));
    TransactionId writer =
        DatumGetTransactionId(SPI_getbinval(row, SPI_tuptable->tupdesc, 2, &isnull));
    Datum max_attempts = SPI_getbinval(row, SPI_tuptable->tupdesc, 3, &isnull);
    found->max_attempts = isnull ? 0 : DatumGetInt32(max_attempts);
    *committed = !TransactionIdIsCurrentTransactionId(writer);
    return true;
}

// The consumer as the registry has it, registering it when asked to.
bool registry_consumer(text* consumer, bool register_new, Consumer* found, bool* committed) {
    Datum name = PointerGetDatum(consumer);
    read_latest_as_store_owner(&find_consumer_row, &name);
    if (read_consumer(found, committed)) return true;
    if (!register_new) return false;
    if (insert_consumer(consumer, found)) {
        *committed = false;
        return true;
    }
    read_latest_as_store_owner(&find_consumer_row, &name);
    if (read_consumer(found, committed)) return true;
    elog(ERROR, "consumer \"%s\" is neither registered nor registrable", text_to_cstring(consumer));
}

}  // namespace

bool find_consumer(text* consumer, bool register_new, Consumer* found) {
    // A Citus worker node reads the registry every time: the coordinator's configure_consumer
    // changes its copy of the reference table without invalidating what this node caches. Names
    // longer than a claim takes (the owner's writes through inbox.messages) are not cached.
    std::size_t length = VARSIZE_ANY_EXHDR(consumer);
    bool cacheable = length <= inbox::max_consumer_bytes &&
                     marker_store()->distribution != StoreDistribution::citus_worker_node;
    CachedName key;
    std::memset(&key, 0, sizeof(key));
    if (cacheable) std::memcpy(key.name, VARDATA_ANY(consumer), length);
    auto* cached =
        cacheable
            ? static_cast<CachedConsumer*>(hash_search(consumer_cache(), &key, HASH_FIND, nullptr))
            : nullptr;
    found->name = consumer;
    if (cached != nullptr) {
        found->id = cached->consumer.id;
        found->max_attempts = cached->consumer.max_attempts;
        return true;
    }
    bool committed = false;
    if (!registry_consumer(consumer, register_new, found, &committed)) return false;
    if (committed && cacheable) {
        // The statements may have delivered invalidations that dropped the cache.
        auto* entry =
            static_cast<CachedConsumer*>(hash_search(consumer_cache(), &key, HASH_ENTER, nullptr));
        entry->consumer = *found;
    }
    return true;
}

namespace {

MarkerStatement configure = {
    .sql =
        "UPDATE inbox.consumer_registry SET retention = $2, max_attempts = $3 "
        "WHERE id OPERATOR(pg_catalog.=) $1",
    .nargs = 3,
    .argtypes = {INT2OID, INTERVALOID, INT4OID},
    .plan = nullptr};

void require_compact_store() {
    if (marker_store()->layout != MarkerLayout::compact)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the markers of this database are still in the layout of inbox 1.0"),
                        errhint("Run ALTER EXTENSION inbox UPDATE.")));
}

}  // namespace

void configure_consumer(text* consumer, NullableDatum retention, NullableDatum max_attempts) {
    require_compact_store();
    pg::spi_connect();
    Consumer configured;
    find_consumer(consumer, true, &configured);
    Datum values[3] = {Int16GetDatum(configured.id), retention.value, max_attempts.value};
    char nulls[3] = {' ', retention.isnull ? 'n' : ' ', max_attempts.isnull ? 'n' : ' '};
    execute_as_store_owner(&configure, values, nulls);
    SPI_finish();
    // Every backend re-reads what it caches of the registry.
    CacheInvalidateRelcacheByRelid(marker_store()->registry);
}

extern "C" {

// inbox.consumer_id(consumer): for the owner's writes through inbox.messages and the update from
// 1.0, which may name consumers of any length the registry can hold.
PG_FUNCTION_INFO_V1(inbox_consumer_id);
PGDLLEXPORT Datum inbox_consumer_id(PG_FUNCTION_ARGS) {
    require_compact_store();
    pg::spi_connect();
    Consumer found;
    find_consumer(PG_GETARG_TEXT_PP(0), true, &found);
    SPI_finish();
    PG_RETURN_INT16(found.id);
}
}
