// See strong_random.hpp.
#include "pg/strong_random.hpp"

extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "port.h"
}

#include <cstring>

namespace pg {
namespace {

unsigned char buffer[strong_random_buffer_size];
size_t next_unused = strong_random_buffer_size;  // empty until the first call
int filled_by_pid = 0;

}  // namespace

void strong_random_bytes(unsigned char* out, size_t length) {
    Assert(length <= strong_random_buffer_size);
    if (filled_by_pid != MyProcPid || strong_random_buffer_size - next_unused < length) {
        if (!pg_strong_random(buffer, sizeof buffer))
            ereport(ERROR,
                    (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate random values")));
        next_unused = 0;
        filled_by_pid = MyProcPid;
    }
    std::memcpy(out, buffer + next_unused, length);
    next_unused += length;
}

}  // namespace pg
