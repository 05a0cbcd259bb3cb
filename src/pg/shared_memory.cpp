// See shared_memory.hpp: the library's two hooks, and the segments they serve.
#include "pg/shared_memory.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

namespace pg {

namespace {

constexpr int max_segments = 4;
const SharedSegment* segments[max_segments];
int segment_count = 0;
shmem_request_hook_type previous_request = nullptr;
shmem_startup_hook_type previous_startup = nullptr;

void request_memory() {
    if (previous_request != nullptr) previous_request();
    for (int i = 0; i < segment_count; i++) {
        RequestAddinShmemSpace(segments[i]->size());
        if (segments[i]->lwlocks > 0)
            RequestNamedLWLockTranche(segments[i]->name, segments[i]->lwlocks);
    }
}

void attach_memory() {
    if (previous_startup != nullptr) previous_startup();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < segment_count; i++) segments[i]->attach();
    LWLockRelease(AddinShmemInitLock);
    if (IsUnderPostmaster) return;
    for (int i = 0; i < segment_count; i++) {
        if (segments[i]->save != nullptr) on_shmem_exit(segments[i]->save, (Datum)0);
        if (segments[i]->restore != nullptr) segments[i]->restore();
    }
}

}  // namespace

void request_shared_segment(const SharedSegment* segment) {
    Assert(segment_count < max_segments);
    segments[segment_count++] = segment;
}

void install_shared_memory() {
    previous_request = shmem_request_hook;
    shmem_request_hook = request_memory;
    previous_startup = shmem_startup_hook;
    shmem_startup_hook = attach_memory;
}

}  // namespace pg
