// Functions that write refuse a standby and a read-only transaction at once, with 25006 and their
// own name, before a statement of theirs fails with its text in the error's context.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/xlog.h"
#include "miscadmin.h"
}

namespace pg {

inline void require_writable(const char* function) {
    if (RecoveryInProgress()) PreventCommandDuringRecovery(function);
    PreventCommandIfReadOnly(function);
}

}  // namespace pg
