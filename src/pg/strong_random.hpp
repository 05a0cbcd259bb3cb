// Strong random bytes (pg_strong_random, OpenSSL's generator where PostgreSQL is built with it),
// drawn from a buffer that one call fills for many: a call of the generator costs about 6,000
// instructions besides 400 a byte, and a message id takes 10 bytes. Each byte is handed out once;
// a process that did not fill the buffer (a backend forked from one that had) fills its own.
#pragma once

#include <cstddef>

namespace pg {

constexpr size_t strong_random_buffer_size = 4096;

// Fills `out` with `length` bytes (at most strong_random_buffer_size); ERROR (XX000) when the
// generator fails.
void strong_random_bytes(unsigned char* out, size_t length);

}  // namespace pg
