#include "relay/batch_report.hpp"

#include <map>

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

}  // namespace inbox_relay
