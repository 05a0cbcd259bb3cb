// A message as the relay takes it from inbox.relay_take, and what a sink made of it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace inbox_relay {

struct OutboxMessage {
    std::string id;  // the uuid given at the send: the message id of every copy published
    std::string destination;
    std::optional<std::string> key;
    // The headers object's members; a string value as the string, any other as its JSON text.
    std::vector<std::pair<std::string, std::string>> headers;
    std::string payload;  // the jsonb text, or the bytes of send_bytes
    bool payload_is_bytes = false;
    int attempt = 1;

    const char* content_type() const {
        return payload_is_bytes ? "application/octet-stream" : "application/json";
    }
};

enum class Delivery {
    confirmed,  // the broker or endpoint has it: relay_done
    refused,    // it said no: relay_failed, retried after --retry-after
    unsent,     // the sink's connection broke before it answered: relay_failed, retried at once
};

struct PublishOutcome {
    Delivery delivery = Delivery::unsent;
    std::string error;  // why, unless confirmed
};

}  // namespace inbox_relay
