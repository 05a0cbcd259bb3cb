// Where the relay publishes: a RabbitMQ broker (amqp_sink) or an HTTP endpoint (http_sink).
#pragma once

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

class Sink {
  public:
    virtual ~Sink() = default;
    virtual bool connected() const = 0;
    // Throws SinkError.
    virtual void connect() = 0;
    // Where it publishes, without credentials.
    virtual std::string describe() const = 0;
    // Publishes the batch and waits until each message is confirmed or refused; one outcome per
    // message, in the batch's order. A connection lost midway leaves the rest unsent and the
    // sink disconnected.
    virtual std::vector<PublishOutcome> publish(const std::vector<OutboxMessage>& batch) = 0;
};

}  // namespace inbox_relay
