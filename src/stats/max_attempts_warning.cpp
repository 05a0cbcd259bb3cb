// See max_attempts_warning.hpp.
extern "C" {
#include "postgres.h"
#include "utils/builtins.h"
}

#include "stats/attempts_table.hpp"
#include "stats/max_attempts_warning.hpp"

void warn_unless_attempts_counted(text* consumer) {
    if (attempts_counted()) return;
    ereport(WARNING,
            (errmsg("max_attempts of consumer \"%s\" has no effect until inbox is preloaded",
                    text_to_cstring(consumer)),
             errdetail("Failed attempts are counted in shared memory, which exists only when inbox "
                       "is in shared_preload_libraries: until then no message is poisoned."),
             errhint("Add inbox to shared_preload_libraries and restart the server; the limit is "
                     "kept and applies from then on.")));
}
