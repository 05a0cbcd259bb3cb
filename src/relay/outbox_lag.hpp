// What inbox.outbox_stats says of the relays' lag.
#pragma once

namespace inbox_relay {

struct OutboxLag {
    long long pending = 0;
    double oldest_pending_seconds = 0;
};

}  // namespace inbox_relay
