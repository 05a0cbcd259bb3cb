// The lag the relay prints after each batch, read again only now and then: reading
// inbox.outbox_stats counts the undelivered messages, so a backlog makes each read longer (90 ms
// at a million pending), and a relay that publishes many small batches, or works through a
// backlog, must not add to the database's load. The lag is read at most once a second, and the
// database spends at most 1% of the time on it (a read of 90 ms waits 9 s).
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "relay/outbox_lag.hpp"

namespace inbox_relay {

constexpr std::chrono::steady_clock::duration lag_read_interval(
    std::chrono::steady_clock::duration last_read_took) {
    return std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1),
                                                         last_read_took * 100);
}

class LagReader {
  public:
    using Clock = std::chrono::steady_clock;
    using ReadLag = std::function<LagReading()>;

    explicit LagReader(std::function<Clock::time_point()> now = Clock::now)
        : now_(std::move(now)) {}

    // "lag: 2300 pending, oldest 1.2 s", or why it is not known; read_lag is called when
    // lag_read_interval says, and no more once it found the role may not read the lag.
    std::string describe(const ReadLag& read_lag);

  private:
    std::function<Clock::time_point()> now_;
    Clock::time_point next_read_;
    LagReading last_;
};

}  // namespace inbox_relay
