#include "relay/batch_report.hpp"

#include <cstdio>
#include <map>

#include "relay/lag_schedule.hpp"

namespace inbox_relay {

std::string count_by_destination(const std::vector<OutboxMessage>& batch,
                                 const std::vector<PublishOutcome>& outcomes, Delivery delivery) {
    std::map<std::string, int> counts;
    for (size_t i = 0; i < batch.size(); ++i) {
        if (outcomes[i].delivery == delivery) {
            ++counts[batch[i].destination];
        }
    }
    std::string text;
    for (const auto& [destination, count] : counts) {
        text += (text.empty() ? "" : ", ") + destination + " " + std::to_string(count);
    }
    return text;
}

std::string LagReader::describe(OutboxDatabase& database) {
    auto now = std::chrono::steady_clock::now();
    if (!forbidden_ && (!last_ || now >= next_read_)) {
        last_ = database.read_lag();
        next_read_ = now + lag_read_interval(std::chrono::steady_clock::now() - now);
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
