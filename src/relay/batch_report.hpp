// What the relay prints of a batch: how many went where, how many failed (the lag: lag_reader.hpp).
#pragma once

#include <string>
#include <vector>

#include "relay/outbox_message.hpp"

namespace inbox_relay {

// "orders 60, payments 40": the messages of a batch with a given delivery, by destination.
std::string count_by_destination(const std::vector<OutboxMessage>& batch,
                                 const std::vector<PublishOutcome>& outcomes, Delivery delivery);

}  // namespace inbox_relay
