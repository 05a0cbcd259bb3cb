// Where the relay publishes: a RabbitMQ broker (amqp_sink) or an HTTP endpoint (http_sink).
// Pipelined: a batch is sent, and its outcomes awaited later, so that the broker confirms one
// batch while the relay takes and publishes the next ones.
#pragma once

#include <chrono>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "relay/outbox_message.hpp"

namespace inbox_relay {

// The sink cannot be reached; the relay tries again after its backoff delay.
class SinkError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A batch sent, with one outcome per message in the batch's order once it is known (unsent
// until then).
struct SentBatch {
    std::vector<OutboxMessage> messages;
    std::vector<PublishOutcome> outcomes;
    std::chrono::steady_clock::time_point sent_at;
};

class Sink {
  public:
    virtual ~Sink() = default;
    virtual bool connected() const = 0;
    // Throws SinkError.
    virtual void connect() = 0;
    // Where it publishes, without credentials.
    virtual std::string describe() const = 0;
    // Publishes the batch without waiting for its outcomes. A connection lost midway leaves the
    // rest of it, and what earlier batches still awaited, unsent, and the sink disconnected.
    virtual void send(std::vector<OutboxMessage> batch) = 0;
    // Waits until each message of the oldest batch in flight is confirmed, refused or known
    // unsent, and hands it over.
    virtual SentBatch await_oldest() = 0;
    // Between batches: what keeps an idle connection alive (AMQP heartbeats), and notices one
    // that died; the longest the relay may wait before it calls this again.
    virtual void keep_alive() {}
    virtual double keep_alive_seconds() const { return 3600; }

    size_t batches_in_flight() const { return in_flight_.size(); }
    // How many full batches the relay keeps sent and unsettled: one where a batch's outcomes are
    // known once it is sent.
    virtual size_t most_batches_in_flight() const { return 1; }

  protected:
    // The batch sent, in flight from now on, its outcomes unsent.
    SentBatch& start_batch(std::vector<OutboxMessage> batch);
    SentBatch take_oldest();

    std::deque<SentBatch> in_flight_;  // in the order sent
};

}  // namespace inbox_relay
