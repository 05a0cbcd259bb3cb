// What the relay prints of a batch: how many went where, how many failed, and the lag.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "relay/outbox_database.hpp"
#include "relay/outbox_message.hpp"

namespace inbox_relay {

// "orders 60, payments 40": the messages of a batch with a given delivery, by destination.
std::string count_by_destination(const std::vector<OutboxMessage>& batch,
                                 const std::vector<PublishOutcome>& outcomes, Delivery delivery);

// The lag as inbox.outbox_stats shows it, read again when lag_read_interval says: a relay that
// publishes many small batches, or works through a backlog, must not add to the database's load.
class LagReader {
  public:
    // "lag: 2300 pending, oldest 1.2 s", or why it is not known.
    std::string describe(OutboxDatabase& database);

  private:
    std::chrono::steady_clock::time_point next_read_;
    std::optional<OutboxLag> last_;
    bool forbidden_ = false;
};

}  // namespace inbox_relay
