#include "relay/lag_reader.hpp"

#include <cstdio>

namespace inbox_relay {

std::string LagReader::describe(const ReadLag& read_lag) {
    Clock::time_point started = now_();
    if (last_.outcome != LagReading::Outcome::forbidden && started >= next_read_) {
        last_ = read_lag();
        next_read_ = started + lag_read_interval(now_() - started);
    }
    switch (last_.outcome) {
        case LagReading::Outcome::forbidden:
            return "lag unknown (the role may not read inbox.outbox_stats: grant it 'monitor')";
        case LagReading::Outcome::failed:
            return "lag unknown (" + last_.error + ")";
        case LagReading::Outcome::read:
            break;
    }
    char age[32];
    std::snprintf(age, sizeof age, "%.1f", last_.lag.oldest_pending_seconds);
    return "lag: " + std::to_string(last_.lag.pending) + " pending, oldest " + age + " s";
}

}  // namespace inbox_relay
