// See consumer_registration.hpp. An id is chosen without waiting: the first id above the
// registry's highest (then, when those are used up, from the lowest up) that no committed
// registration holds, no marker or stream position carries and no open registration is taking.
// The markers and positions count as much as the registry: a registry lost on its own (a restore
// whose copy of it failed) must not hand a new consumer the markers or streams of an old one. Each
// candidate is reserved by a transaction-level lock taken without waiting (an open registration
// holding it is passed over) and checked against the committed rows once reserved; the lock goes
// with the transaction, or with the subtransaction that rolls back, as the row does.
extern "C" {
#include "postgres.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
}

#include "store/consumer_registration.hpp"
#include "store/marker_table.hpp"

namespace {

constexpr int32 highest_consumer_id = PG_INT16_MAX;

// The reservation of an id: advisory, in pg_locks as (classid, objid, objsubid) =
// (1768841848, id, 4); "inbx" in ASCII. SQL's advisory lock functions only make objsubid 1 or 2.
constexpr uint32 id_lock_key = 0x696e6278;
constexpr uint16 id_lock_space = 4;

LOCKTAG id_lock(int32 id) {
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, id_lock_key, static_cast<uint32>(id), id_lock_space);
    return tag;
}

bool reserve_id(int32 id) {
    LOCKTAG tag = id_lock(id);
    return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

// An id found taken once reserved: its lock goes at once, so that a round over every id holds
// one lock at a time.
void give_up_id(int32 id) {
    LOCKTAG tag = id_lock(id);
    LockRelease(&tag, ExclusiveLock, false);
}

MarkerStatement highest_id = {.sql = "SELECT pg_catalog.max(id) FROM inbox.consumer_registry",
                              .nargs = 0,
                              .argtypes = {},
                              .plan = nullptr};

MarkerStatement find_id = {
    .sql = "SELECT FROM inbox.consumer_registry WHERE id OPERATOR(pg_catalog.=) $1",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// An index descent (the markers' primary key leads with the consumer). A statement of its own:
// Citus plans it on the distributed markers as it is, where a union with the registry, a
// reference table, would need a plan it cannot make.
MarkerStatement find_id_in_markers = {
    .sql = "SELECT 1 FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 LIMIT 1",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// The streams' positions (1.3) carry consumer ids too; their primary key leads with the consumer.
MarkerStatement find_id_in_streams = {
    .sql =
        "SELECT 1 FROM inbox.stream_positions WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "LIMIT 1",
    .nargs = 1,
    .argtypes = {INT2OID},
    .plan = nullptr};

// ON CONFLICT waits for an open transaction registering the same name, and inserts nothing when
// a committed one did. An id is never in conflict: it is reserved and checked before.
MarkerStatement insert_registry_row = {
    .sql =
        "INSERT INTO inbox.consumer_registry (id, name) VALUES ($1, $2) "
        "ON CONFLICT (name) DO NOTHING RETURNING max_attempts",
    .nargs = 2,
    .argtypes = {INT2OID, TEXTOID},
    .plan = nullptr};

// Whether a committed registration holds `id`, or a committed marker or stream position carries
// it (every commit so far, whatever this transaction's snapshot).
bool id_taken(int32 id) {
    Datum value = Int16GetDatum(static_cast<int16>(id));
    read_latest_as_store_owner(&find_id, &value);
    if (SPI_processed > 0) return true;
    read_latest_as_store_owner(&find_id_in_markers, &value);
    if (SPI_processed > 0) return true;
    Oid streams_owner = stream_positions_owner();
    if (!OidIsValid(streams_owner)) return false;
    read_latest_as(streams_owner, &find_id_in_streams, &value);
    return SPI_processed > 0;
}

// The ids in the order they are tried: those above the highest registered one first, then from
// the lowest up, so that the usual registration costs one probe and a full registry is found out
// after one round.
int32 first_candidate() {
    read_latest_as_store_owner(&highest_id, nullptr);
    bool isnull = true;
    Datum highest = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return isnull || DatumGetInt16(highest) == highest_consumer_id ? 1 : DatumGetInt16(highest) + 1;
}

int32 next_candidate(int32 id) {
    return id == highest_consumer_id ? 1 : id + 1;
}

[[noreturn]] void report_registry_full(text* consumer) {
    ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
                    errmsg("consumer \"%s\" cannot be registered: all %d consumer ids are taken",
                           text_to_cstring(consumer), highest_consumer_id),
                    errdetail("A database holds at most %d consumers.", highest_consumer_id)));
}

// Consumers register on the coordinator of a Citus cluster, which hands out the ids: a worker
// node asks it, in a transaction of the coordinator's.
MarkerStatement register_on_coordinator = {
    .sql =
        "SELECT c.success, c.result FROM pg_catalog.run_command_on_coordinator("
        "'SELECT inbox.consumer_id(' OPERATOR(pg_catalog.||) pg_catalog.quote_literal($1) "
        "OPERATOR(pg_catalog.||) ')') c",
    .nargs = 1,
    .argtypes = {TEXTOID},
    .plan = nullptr};

int16 register_by_coordinator(text* consumer) {
    Datum name = PointerGetDatum(consumer);
    execute_as_store_owner(&register_on_coordinator, &name);
    bool isnull = true;
    if (SPI_processed != 1 ||
        !DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
        ereport(ERROR,
                (errcode(ERRCODE_CONNECTION_FAILURE),
                 errmsg("consumer \"%s\" could not be registered by the Citus coordinator",
                        text_to_cstring(consumer)),
                 errdetail("%s", SPI_processed == 1
                                     ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)
                                     : "The coordinator is not in Citus's node list.")));
    return static_cast<int16>(
        pg_strtoint32(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)));
}

}  // namespace

bool insert_consumer(text* consumer, Consumer* registered) {
    if (RecoveryInProgress())
        ereport(ERROR,
                (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
                 errmsg("consumer \"%s\" is not registered, and a standby cannot register it",
                        text_to_cstring(consumer)),
                 errhint("Claim its first message on the primary.")));
    if (marker_store()->distribution == StoreDistribution::citus_worker_node) {
        // Its id only: a worker node reads the registry at every claim, settings included.
        registered->id = register_by_coordinator(consumer);
        registered->max_attempts = 0;
        registered->owner = InvalidOid;
        registered->owner_missing = false;
        return true;
    }
    int32 id = first_candidate();
    for (int32 tried = 0; tried < highest_consumer_id; tried++, id = next_candidate(id)) {
        // Held by an open registration: passed over. Once reserved, the id is checked against
        // the registrations committed until then.
        if (!reserve_id(id)) continue;
        if (id_taken(id)) {
            give_up_id(id);
            continue;
        }
        Datum values[2] = {Int16GetDatum(static_cast<int16>(id)), PointerGetDatum(consumer)};
        execute_as_store_owner(&insert_registry_row, values);
        if (SPI_processed == 0) return false;  // committed by another transaction
        bool isnull = true;
        Datum max_attempts =
            SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        registered->id = static_cast<int16>(id);
        registered->max_attempts = isnull ? 0 : DatumGetInt32(max_attempts);
        registered->owner = InvalidOid;  // configure_consumer gives one
        registered->owner_missing = false;
        return true;
    }
    report_registry_full(consumer);
}
