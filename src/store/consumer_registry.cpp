// See consumer_registry.hpp: finding a consumer, configuring it, and inbox.consumer_id.
//
// The cache maps names to ids for the backend's life. An id never changes for a name (the
// registry refuses renames and removals), so the cache is dropped only when the registry table
// itself changes (relcache invalidation: TRUNCATE, DROP EXTENSION, a restore). Only committed
// registrations are cached: a rollback takes an uncommitted one back, and its id goes to the
// next registration. The registry is read with a snapshot taken at the lookup, so that a
// consumer registered since this transaction's snapshot is found, not registered again. Every
// lookup first takes in the invalidations sent since the last one (a cheap test when there are
// none), so that a consumer configured by another session (its owner above all) is read again at
// this session's next call, even within one transaction.
extern "C" {
#include "postgres.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/relcache_invalidation.hpp"
#include "pg/spi.hpp"
#include "settings.hpp"
#include "store/consumer_access.hpp"
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

void forget_consumers(Oid relid) {
    if (cache != nullptr && (relid == InvalidOid || relid == cached_for_registry)) {
        hash_destroy(cache);
        cache = nullptr;
    }
}

// An owner kept by name (1.3) is looked up when cached: a role created, renamed or dropped since
// (the missing owner of a restore created at last) is looked up again.
void forget_consumers_of_roles(Datum, pg::SyscacheId, uint32) {
    forget_consumers(InvalidOid);
}

HTAB* consumer_cache() {
    static bool callback_registered = false;
    if (!callback_registered) {
        pg::forget_on_relcache_invalidation(forget_consumers);
        CacheRegisterSyscacheCallback(AUTHOID, forget_consumers_of_roles, (Datum)0);
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

// The registry of 1.2, and of 1.1, whose consumers have no owner.
#define FIND_CONSUMER_ROW(columns)                                              \
    {                                                                           \
        .sql = "SELECT " columns                                                \
               " FROM inbox.consumer_registry "                                 \
               "WHERE name OPERATOR(pg_catalog.=) $1 COLLATE pg_catalog.\"C\"", \
        .nargs = 1, .argtypes = {TEXTOID}, .plan = nullptr                      \
    }
MarkerStatement find_consumer_row = FIND_CONSUMER_ROW("id, xmin, max_attempts, owner");
MarkerStatement find_consumer_row_1_1 = FIND_CONSUMER_ROW("id, xmin, max_attempts");
#undef FIND_CONSUMER_ROW

// The consumer in the first row of the last statement; *committed is false when this
// transaction wrote the row.
bool read_consumer(Consumer* found, bool* committed) {
    if (SPI_processed == 0) return false;
    bool isnull = false;
    HeapTuple row = SPI_tuptable->vals[0];
    TupleDesc columns = SPI_tuptable->tupdesc;
    found->id = DatumGetInt16(SPI_getbinval(row, columns, 1, &isnull));
    TransactionId writer = DatumGetTransactionId(SPI_getbinval(row, columns, 2, &isnull));
    Datum max_attempts = SPI_getbinval(row, columns, 3, &isnull);
    found->max_attempts = isnull ? 0 : DatumGetInt32(max_attempts);
    found->owner = InvalidOid;
    found->owner_missing = false;
    if (columns->natts >= 4) read_consumer_owner(row, columns, 4, found);
    *committed = !TransactionIdIsCurrentTransactionId(writer);
    return true;
}

bool read_registry_row(text* consumer, Consumer* found, bool* committed) {
    Datum name = PointerGetDatum(consumer);
    read_latest_as_store_owner(marker_store()->owner_column != OwnerColumn::none
                                   ? &find_consumer_row
                                   : &find_consumer_row_1_1,
                               &name);
    return read_consumer(found, committed);
}

[[noreturn]] void report_not_configured(text* consumer) {
    char* name = text_to_cstring(consumer);
    ereport(ERROR,
            (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("consumer \"%s\" is not configured", name),
             errdetail("inbox.consumer_registration is \"configured\": only "
                       "inbox.configure_consumer registers a consumer."),
             errhint("Check the consumer's name, or register it: SELECT "
                     "inbox.configure_consumer(%s, owner => ...);",
                     quote_literal_cstr(name))));
}

// The consumer as the registry has it, registering it as `registration` says.
bool registry_consumer(text* consumer, Registration registration, Consumer* found,
                       bool* committed) {
    if (read_registry_row(consumer, found, committed)) return true;
    if (registration == Registration::none) return false;
    if (registration == Registration::by_claim &&
        consumer_registration == static_cast<int>(ConsumerRegistration::configured))
        report_not_configured(consumer);
    if (insert_consumer(consumer, found)) {
        *committed = false;
        return true;
    }
    if (read_registry_row(consumer, found, committed)) return true;
    elog(ERROR, "consumer \"%s\" is neither registered nor registrable", text_to_cstring(consumer));
}

}  // namespace

bool find_consumer(text* consumer, Registration registration, Consumer* found) {
    // A Citus worker node reads the registry every time: the coordinator's configure_consumer
    // changes its copy of the reference table without invalidating what this node caches. Names
    // longer than a claim takes (the owner's writes through inbox.messages) are not cached.
    std::size_t length = VARSIZE_ANY_EXHDR(consumer);
    bool cacheable = length <= inbox::max_consumer_bytes &&
                     marker_store()->distribution != StoreDistribution::citus_worker_node;
    AcceptInvalidationMessages();
    CachedName key;
    std::memset(&key, 0, sizeof(key));
    if (cacheable) std::memcpy(key.name, VARDATA_ANY(consumer), length);
    auto* cached =
        cacheable
            ? static_cast<CachedConsumer*>(hash_search(consumer_cache(), &key, HASH_FIND, nullptr))
            : nullptr;
    found->name = consumer;
    if (cached != nullptr) {
        *found = cached->consumer;
        found->name = consumer;
        return true;
    }
    bool committed = false;
    if (!registry_consumer(consumer, registration, found, &committed)) return false;
    if (committed && cacheable) {
        // The statements may have delivered invalidations that dropped the cache.
        auto* entry =
            static_cast<CachedConsumer*>(hash_search(consumer_cache(), &key, HASH_ENTER, nullptr));
        entry->consumer = *found;
    }
    return true;
}

namespace {

// The consumer's row locked, with its settings as the last committed change left them: the
// owner decides who may configure it, and the settings a call does not name are kept.
MarkerStatement lock_consumer_row = {
    .sql =
        "SELECT owner, retention, max_attempts FROM inbox.consumer_registry "
        "WHERE id OPERATOR(pg_catalog.=) $1 FOR UPDATE",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// 1.3's (the owner by name), 1.2's (a regrole), and 1.1's, whose function has no owner.
#define CONFIGURE(owner_type)                                                                   \
    {                                                                                           \
        .sql =                                                                                  \
            "UPDATE inbox.consumer_registry SET retention = $2, max_attempts = $3, owner = $4 " \
            "WHERE id OPERATOR(pg_catalog.=) $1",                                               \
        .nargs = 4, .argtypes = {INT2OID, INTERVALOID, INT4OID, owner_type}, .plan = nullptr    \
    }
MarkerStatement configure_owner_by_name = CONFIGURE(NAMEOID);
MarkerStatement configure_owner_by_oid = CONFIGURE(REGROLEOID);
#undef CONFIGURE
MarkerStatement configure_1_1 = {
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

// A consumer that the lookup found (with a snapshot taken then) and that this transaction's
// snapshot cannot see, under REPEATABLE READ or SERIALIZABLE: registered, or changed, by a
// transaction that committed after it began. Changing it would act on a row the transaction
// cannot see: a serialization failure, to be retried, as PostgreSQL reports an UPDATE of a row
// changed since the snapshot.
[[noreturn]] void report_unseen_consumer(text* consumer) {
    ereport(ERROR,
            (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
             errmsg("could not serialize access to consumer \"%s\"", text_to_cstring(consumer)),
             errdetail("It was registered or changed by a transaction that committed after "
                       "this transaction's snapshot."),
             errhint("Retry the transaction.")));
}

// A consumer's settings as its row holds them, in the registry's own types.
struct StoredSettings {
    NullableDatum owner;
    NullableDatum retention;
    NullableDatum max_attempts;
};

// The registered consumer's row locked until the transaction ends: its owner, and its settings.
StoredSettings lock_consumer(Consumer* consumer) {
    Datum value = Int16GetDatum(consumer->id);
    execute_as_store_owner(&lock_consumer_row, &value);
    if (SPI_processed == 0) report_unseen_consumer(consumer->name);
    HeapTuple row = SPI_tuptable->vals[0];
    TupleDesc columns = SPI_tuptable->tupdesc;
    read_consumer_owner(row, columns, 1, consumer);
    StoredSettings stored;
    stored.owner.value = SPI_getbinval(row, columns, 1, &stored.owner.isnull);
    stored.retention.value = SPI_getbinval(row, columns, 2, &stored.retention.isnull);
    stored.max_attempts.value = SPI_getbinval(row, columns, 3, &stored.max_attempts.isnull);
    return stored;
}

// The new owner as the registry's column takes it.
NullableDatum owner_value(OwnerColumn column, const NullableDatum& role) {
    if (role.isnull || column == OwnerColumn::role_oid) return role;
    Oid owner = DatumGetObjectId(role.value);
    return {.value = DirectFunctionCall1(namein, CStringGetDatum(GetUserNameFromId(owner, false))),
            .isnull = false};
}

NullableDatum named_or_stored(const ConsumerSetting& setting, const NullableDatum& stored) {
    return setting.named ? setting.value : stored;
}

}  // namespace

bool find_consumer_to_act(text* consumer, Registration registration, Consumer* found) {
    if (!find_consumer(consumer, registration, found)) return false;
    require_consumer_access(*found);
    return true;
}

void configure_consumer(text* consumer, const ConsumerSettings& settings) {
    require_compact_store();
    pg::spi_connect();
    Consumer configured;
    find_consumer(consumer, Registration::always, &configured);
    OwnerColumn owner_column = marker_store()->owner_column;
    MarkerStatement* update = &configure_1_1;
    NullableDatum values[4] = {{.value = Int16GetDatum(configured.id), .isnull = false},
                               settings.retention.value,
                               settings.max_attempts.value,
                               {.value = (Datum)0, .isnull = true}};
    if (owner_column != OwnerColumn::none) {
        StoredSettings stored = lock_consumer(&configured);
        require_consumer_access(configured);
        const ConsumerSetting& owner = settings.owner;
        if (owner.named && !owner.value.isnull)
            require_new_owner(consumer, DatumGetObjectId(owner.value.value));
        values[1] = named_or_stored(settings.retention, stored.retention);
        values[2] = named_or_stored(settings.max_attempts, stored.max_attempts);
        values[3] = owner.named ? owner_value(owner_column, owner.value) : stored.owner;
        update = owner_column == OwnerColumn::role_name ? &configure_owner_by_name
                                                        : &configure_owner_by_oid;
    } else {
        require_consumer_access(configured);
    }
    Datum datums[4];
    char nulls[4];
    for (int i = 0; i < 4; i++) {
        datums[i] = values[i].value;
        nulls[i] = values[i].isnull ? 'n' : ' ';
    }
    execute_as_store_owner(update, datums, nulls);
    if (SPI_processed == 0) report_unseen_consumer(consumer);
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
    find_consumer(PG_GETARG_TEXT_PP(0), Registration::always, &found);
    SPI_finish();
    PG_RETURN_INT16(found.id);
}
}
