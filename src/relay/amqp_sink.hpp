// Publishes to RabbitMQ (AMQP 0-9-1, rabbitmq-c; over TLS for amqps://, the broker's certificate
// verified) with publisher confirms: exchange = the destination, routing key = the key ("" without
// one), persistent, message_id = the outbox id.
// A message is confirmed only when the broker acked it; with `mandatory`, not when the broker
// returned it first (no queue is bound for it).
#pragma once

#include "relay/rabbitmq.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "relay/options.hpp"
#include "relay/sink.hpp"

namespace inbox_relay {

class AmqpSink : public Sink {
  public:
    // The broker of options.amqp_url; throws std::invalid_argument when it is not
    // amqp[s]://user:password@host:port/vhost. options.fail_unroutable: messages are published
    // mandatory, and one the broker returns is refused.
    explicit AmqpSink(const RelayOptions& options);
    ~AmqpSink() override;
    AmqpSink(const AmqpSink&) = delete;
    AmqpSink& operator=(const AmqpSink&) = delete;

    bool connected() const override { return connection_ != nullptr; }
    void connect() override;
    std::string describe() const override;
    void send(std::vector<OutboxMessage> batch) override;
    SentBatch await_oldest() override;
    // While nothing is awaited: sends a heartbeat every half interval, and reads what the broker
    // sent meanwhile (its heartbeats, a close), without waiting.
    void keep_alive() override;
    double keep_alive_seconds() const override;
    // The broker confirms a persistent message once it is on disk, which it syncs now and then:
    // while the relay awaits the oldest batch's confirms, then settles it and takes the next,
    // the broker needs more than one batch to work on, or it idles (three rather than two:
    // docs/outbox.md, the relay's throughput; four did no better).
    size_t most_batches_in_flight() const override { return 3; }

  private:
    // A publication awaiting the broker's confirm: its batch, and its place in the batch.
    struct Awaited {
        SentBatch* batch;
        size_t index;
    };

    // A socket of the connection: TLS with the broker's certificate verified, or plain TCP.
    amqp_socket_t* new_socket();
    void open_channel();
    void disconnect();
    // A connection that cannot be made: closed, and SinkError with why.
    [[noreturn]] void give_up(const std::string& why);
    // Drops the connection: what is not yet answered, in every batch in flight, stays unsent,
    // with the reason.
    void lose_connection(const std::string& reason);
    // The error an RPC reply carries, or "" when it succeeded. A channel.close or
    // connection.close from the broker is answered with its close-ok, as the protocol asks.
    std::string reply_error(amqp_rpc_reply_t reply);
    // "" when the exchange exists (asked once per connection with a passive exchange.declare,
    // after every earlier publication is answered, so that no confirm arrives in the middle of
    // the RPC), or why not.
    std::string exchange_error(const std::string& exchange);
    bool publish_one(const OutboxMessage& message);
    // Reads confirms until the publication `tag` is answered; if it closed the channel instead,
    // it is refused with the broker's reason and a new channel is opened.
    void await_alone(uint64_t tag, PublishOutcome& outcome);
    // Reads the broker's next confirm (or the connection's end) and settles what it answers.
    void read_confirm();
    // Reads the broker's next frame and acts on it; `idle`: none within `timeout` is no error.
    void read_frame(timeval timeout, bool idle);
    // A basic.return, then the properties of the message returned: its id kept with the reason
    // until its confirm (which follows) refuses it.
    void note_return(const amqp_frame_t& frame);
    void settle(uint64_t tag, bool multiple, const PublishOutcome& answer);

    std::string host_;
    int port_ = 5672;
    std::string user_;
    std::string password_;
    std::string vhost_;
    int heartbeat_seconds_;
    std::chrono::steady_clock::time_point heartbeat_sent_;  // the last one keep_alive sent
    bool tls_ = false;
    std::string ca_file_;
    std::string cert_file_;  // with key_file_, the certificate the relay shows; "": none
    std::string key_file_;
    bool mandatory_;
    amqp_connection_state_t connection_ = nullptr;
    bool channel_open_ = false;
    uint64_t next_delivery_tag_ = 1;       // confirms number the channel's publications from 1
    std::map<uint64_t, Awaited> awaited_;  // by delivery tag
    std::set<std::string> known_exchanges_;
    // After a channel closed by the broker (an exchange the user may not write to): each
    // message is published alone and awaited, so that the one the broker refuses is refused by
    // itself and the others of its batch go out, not all of them again and again until dead.
    bool one_at_a_time_ = false;
    bool channel_error_seen_ = false;  // in the batch being sent one at a time
    std::string channel_error_;        // the broker's reason for the last channel close
    std::string return_reason_;        // of the basic.return whose message's properties come next
    std::map<std::string, std::string> returned_;  // message id -> why, until its confirm
};

}  // namespace inbox_relay
