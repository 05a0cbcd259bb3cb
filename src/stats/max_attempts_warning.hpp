// A consumer's max_attempts acts on failed attempts, which are counted in shared memory, and that
// exists only when the library is preloaded. Without the preload the limit is stored all the
// same, and takes effect from the first start with it; configure_consumer warns that it does not
// yet. A warning rather than an error: configuring before the restart that adds the preload is a
// fair order of work.
#pragma once

extern "C" {
#include "postgres.h"
}

// Warns when failed attempts are not counted in this server (no preload).
void warn_unless_attempts_counted(text* consumer);
