// Shared memory of a preloaded library, PostgreSQL 15 style: one shmem_request_hook and one
// shmem_startup_hook, chained to the previous ones, serve every segment of the library.
#pragma once

extern "C" {
#include "postgres.h"
}

namespace pg {

struct SharedSegment {
    const char* name;  // of the segment, and of its LWLock tranche
    Size (*size)();    // bytes to reserve
    int lwlocks;       // locks of the named tranche `name`
    // Finds or makes the segment (ShmemInitStruct), under AddinShmemInitLock.
    void (*attach)();
    // Optional, for a segment whose state outlives a clean shutdown: in the postmaster, once
    // every segment is attached (new memory, at the start and after a crash), `restore` loads
    // the saved state and `save` is registered to run when shared memory goes (on_shmem_exit).
    void (*restore)();
    void (*save)(int code, Datum arg);
};

// From _PG_init while shared_preload_libraries is processed, before install_shared_memory().
// `segment` must outlive the process (a namespace-scope constant).
void request_shared_segment(const SharedSegment* segment);
void install_shared_memory();

}  // namespace pg
