#include "relay/lag_reader.hpp"

#include <cstdio>

namespace inbox_relay {

std::string LagReader::describe(const ReadLag& read_lag) {
    Clock::time_point started = now_();
    if (!forbidden_ && (!last_ || started >= next_read_)) {
        last_ = read_lag();
        next_read_ = started + lag_read_interval(now_() - started);
        forbidden_ = !last_;
    }
    if (forbidden_) {
        return "lag unknown (the role may not read inbox.outbox_stats: grant it 'monitor')";
    }
    char age[32];
    std::snprintf(age, sizeof age, "%.1f", last_->oldest_pending_seconds);
    return "lag: " + std::to_string(last_->pending) + " pending, oldest " + age + " s";
}

}  // namespace inbox_relay
