// When the relay reads its lag again. Reading inbox.outbox_stats counts the undelivered messages,
// so a backlog makes each read longer (90 ms at a million pending): the lag is read at most once
// a second, and the database spends at most 1% of the time on it (a read of 90 ms waits 9 s).
#pragma once

#include <algorithm>
#include <chrono>

namespace inbox_relay {

constexpr std::chrono::steady_clock::duration lag_read_interval(
    std::chrono::steady_clock::duration last_read_took) {
    return std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1),
                                                         last_read_took * 100);
}

}  // namespace inbox_relay
