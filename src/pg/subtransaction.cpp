// See subtransaction.hpp: the subtransaction, its error caught and its resources released.
#include "pg/subtransaction.hpp"

extern "C" {
#include "access/xact.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
}

namespace pg {

ErrorData* run_in_subtransaction(void (*body)(void*), void* argument) {
    MemoryContext caller_context = CurrentMemoryContext;
    ResourceOwner caller_owner = CurrentResourceOwner;
    ErrorData* volatile error = nullptr;  // assigned after the longjmp, read after PG_END_TRY
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(caller_context);
    PG_TRY();
    {
        body(argument);
        ReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        error = CopyErrorData();
        FlushErrorState();
        RollbackAndReleaseCurrentSubTransaction();
        MemoryContextSwitchTo(caller_context);
        CurrentResourceOwner = caller_owner;
        if (error->sqlerrcode == ERRCODE_QUERY_CANCELED) ReThrowError(error);
    }
    PG_END_TRY();
    return error;
}

}  // namespace pg
