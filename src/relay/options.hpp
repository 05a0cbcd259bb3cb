// What inbox-relay is told to do: from its command line, or from INBOX_RELAY_* variables
// (which a systemd unit's EnvironmentFile sets).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace inbox_relay {

struct RelayOptions {
    std::string database;  // a libpq connection string or URI
    std::string amqp_url;  // exactly one of amqp_url and http_url is set
    // amqps://: the CA certificates (PEM) to verify the broker's certificate; "": the system's
    std::string amqp_ca;
    // amqps://: a certificate (PEM, with its chain) and its private key (PEM, unencrypted) that the
    // relay presents to a broker asking for one; both or neither
    std::string amqp_cert;
    std::string amqp_key;
    std::string http_url;
    std::string name;                       // the relay's name in inbox.outbox (leased_by)
    std::vector<std::string> destinations;  // empty: every destination
    int batch = 100;
    double lease_seconds = 30;
    double retry_after_seconds = 10;
    double poll_seconds = 1;
    // RabbitMQ: a message no queue is bound for is published `mandatory`, and failed when the
    // broker returns it, rather than acked and dropped.
    bool fail_unroutable = false;
    // RabbitMQ: AMQP heartbeats every that many seconds, each side's (0: none).
    int heartbeat_seconds = 60;
    bool help = false;
};

// A command line that cannot be run: the message says what to change (exit status 2).
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The options, each from the command line or else from the environment; throws UsageError.
RelayOptions parse_options(int argc, char** argv);

std::string usage_text();

}  // namespace inbox_relay
