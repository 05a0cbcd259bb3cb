// See guard.hpp: what run_cpp raises once the exception is gone.
#include "pg/guard.hpp"

#include <cstring>

namespace pg::detail {

const char* keep_message(const char* message) noexcept {
    static char buffer[1024];
    std::strncpy(buffer, message, sizeof(buffer) - 1);
    buffer[sizeof(buffer) - 1] = '\0';
    return buffer;
}

void raise(const PendingError& pending) {
    if (pending.postgres != nullptr) ReThrowError(pending.postgres);
    ereport(ERROR, (errcode(pending.sqlstate), errmsg("%s", pending.message)));
    pg_unreachable();
}

}  // namespace pg::detail
