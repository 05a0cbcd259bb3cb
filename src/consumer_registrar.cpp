extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
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

}  // namespace

bool register_in_own_transaction(text* consumer, Consumer* found) {
    // A worker inserting into the registry would wait for a lock this transaction holds.
    Relation registry = RelationIdGetRelation(marker_store()->registry);
    bool locked = RelationIsValid(registry) && CheckRelationLockedByMe(registry, ShareLock, true);
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
