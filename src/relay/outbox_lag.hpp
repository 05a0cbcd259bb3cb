// What inbox.outbox_stats says of the relays' lag, and what a read of it found.
#pragma once

#include <string>

namespace inbox_relay {

struct OutboxLag {
    long long pending = 0;
    double oldest_pending_seconds = 0;
};

// The lag read; or the role may not read it (no 'monitor' access: not asked again); or the read
// failed otherwise (a statement timeout, a lock), `error` saying why: asked again later.
struct LagReading {
    enum class Outcome { read, forbidden, failed };
    Outcome outcome = Outcome::read;
    OutboxLag lag;
    std::string error;
};

}  // namespace inbox_relay
