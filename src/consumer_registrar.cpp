extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
}

#include <cstring>

#include "consumer_registrar.hpp"
#include "consumer_registry.hpp"
#include "marker_table.hpp"
#include "message_key.hpp"
#include "pg/spi.hpp"
#include "worker_session.hpp"

namespace {

constexpr const char* registrar_type = "inbox consumer registrar";

// What the claiming backend and the worker share, in a dynamic shared memory segment.
struct Registration {
    Oid database;
    char consumer[inbox::max_consumer_bytes + 1];
    bool registered;
    Consumer found;
    char error[256];
};

// The coordinator registers it in a transaction of its own, reached through Citus as the owner
// of the markers; its answer is the id.
MarkerStatement register_on_coordinator = {
    .sql =
        "SELECT c.success, c.result FROM pg_catalog.run_command_on_coordinator("
        "'SELECT inbox.consumer_id(' OPERATOR(pg_catalog.||) pg_catalog.quote_literal($1) "
        "OPERATOR(pg_catalog.||) ')') c",
    .nargs = 1,
    .argtypes = {TEXTOID},
    .plan = nullptr};

int16 register_by_coordinator(text* consumer) {
    pg::spi_connect();
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
    auto id = static_cast<int16>(
        pg_strtoint32(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2)));
    SPI_finish();
    return id;
}

}  // namespace

bool register_in_own_transaction(text* consumer, Consumer* found) {
    if (marker_store()->distribution == StoreDistribution::citus_worker_node) {
        // Its id only: a worker node reads the registry at every claim, settings included.
        *found = {.id = register_by_coordinator(consumer), .max_attempts = 0};
        return true;
    }
    // A worker inserting into the registry would wait for a lock this transaction holds: one
    // that blocks inserts; on Citus, any write to the registry, since Citus locks a reference
    // table's shard whole, on every node, for each writing transaction.
    const MarkerStore* store = marker_store();
    LOCKMODE blocking =
        store->distribution == StoreDistribution::local ? ShareLock : RowExclusiveLock;
    Relation registry = RelationIdGetRelation(store->registry);
    bool locked = RelationIsValid(registry) && CheckRelationLockedByMe(registry, blocking, true);
    if (RelationIsValid(registry)) RelationClose(registry);
    if (locked) return false;

    dsm_segment* segment = dsm_create(sizeof(Registration), 0);
    auto* registration = static_cast<Registration*>(dsm_segment_address(segment));
    std::memset(registration, 0, sizeof(Registration));
    registration->database = MyDatabaseId;
    std::memcpy(registration->consumer, VARDATA_ANY(consumer), VARSIZE_ANY_EXHDR(consumer));

    BackgroundWorker worker = {};
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    strlcpy(worker.bgw_library_name, "inbox", BGW_MAXLEN);
    strlcpy(worker.bgw_function_name, "inbox_registrar_main", BGW_MAXLEN);
    strlcpy(worker.bgw_name, registrar_type, BGW_MAXLEN);
    strlcpy(worker.bgw_type, registrar_type, BGW_MAXLEN);
    worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(segment));
    worker.bgw_notify_pid = MyProcPid;
    BackgroundWorkerHandle* handle = nullptr;
    if (!RegisterDynamicBackgroundWorker(&worker, &handle)) {
        dsm_detach(segment);
        return false;
    }
    if (WaitForBackgroundWorkerShutdown(handle) == BGWH_POSTMASTER_DIED)
        ereport(FATAL, (errcode(ERRCODE_ADMIN_SHUTDOWN), errmsg("the postmaster died")));
    bool registered = registration->registered;
    *found = registration->found;
    if (!registered)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("consumer \"%s\" could not be registered", registration->consumer),
                        errdetail("%s", registration->error[0] != '\0'
                                            ? registration->error
                                            : "The registering worker ended without an answer.")));
    dsm_detach(segment);
    return true;
}

void inbox_registrar_main(Datum segment_handle) {
    take_worker_signals();
    dsm_segment* segment = dsm_attach(DatumGetUInt32(segment_handle));
    if (segment == nullptr) proc_exit(1);  // the claim gave up waiting
    auto* registration = static_cast<Registration*>(dsm_segment_address(segment));
    BackgroundWorkerInitializeConnectionByOid(registration->database, InvalidOid, 0);
    pin_worker_settings();
    pgstat_report_appname(registrar_type);

    PG_TRY();
    {
        StartTransactionCommand();
        PushActiveSnapshot(GetTransactionSnapshot());
        registration->found = register_consumer_now(cstring_to_text(registration->consumer));
        PopActiveSnapshot();
        CommitTransactionCommand();
        registration->registered = true;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(TopMemoryContext);
        ErrorData* error = CopyErrorData();
        strlcpy(registration->error, error->message, sizeof(registration->error));
        PG_RE_THROW();
    }
    PG_END_TRY();
    proc_exit(0);
}
