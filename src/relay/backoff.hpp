// The delay before the next attempt to reach a database, a broker or an endpoint that failed:
// 0.1 s, doubling up to 10 s, back to none after a success. One per side, so that a broker that
// is down does not slow the reconnection to the database, nor the other way round.
#pragma once

#include <algorithm>

namespace inbox_relay {

class Backoff {
  public:
    void failed() {
        delay_seconds_ = delay_seconds_ == 0 ? 0.1 : std::min(delay_seconds_ * 2, 10.0);
    }
    void succeeded() { delay_seconds_ = 0; }
    double delay_seconds() const { return delay_seconds_; }

  private:
    double delay_seconds_ = 0;
};

}  // namespace inbox_relay
