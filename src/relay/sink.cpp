#include "relay/sink.hpp"

namespace inbox_relay {

SentBatch& Sink::start_batch(std::vector<OutboxMessage> batch) {
    SentBatch& sent = in_flight_.emplace_back();
    sent.outcomes.assign(batch.size(), PublishOutcome{Delivery::unsent, "not connected"});
    sent.messages = std::move(batch);
    sent.sent_at = std::chrono::steady_clock::now();
    return sent;
}

SentBatch Sink::take_oldest() {
    SentBatch oldest = std::move(in_flight_.front());
    in_flight_.pop_front();
    return oldest;
}

}  // namespace inbox_relay
