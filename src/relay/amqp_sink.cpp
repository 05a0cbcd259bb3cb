#include "relay/amqp_sink.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/time.h>

#include <cstring>
#include <stdexcept>

namespace inbox_relay {
namespace {

constexpr amqp_channel_t channel = 1;
constexpr int confirm_timeout_seconds = 30;

amqp_bytes_t bytes_of(const std::string& text) {
    return amqp_bytes_t{.len = text.size(), .bytes = const_cast<char*>(text.data())};
}

std::string text_of(amqp_bytes_t bytes) {
    return std::string(static_cast<const char*>(bytes.bytes), bytes.len);
}

// Why a message cannot be published at all, or "": a header name is an AMQP short string (at
// most 255 bytes), and the properties travel in one frame. Such a message is refused by itself
// (relay_failed, then dead), where publishing it would break the connection under the rest of
// its batch, every time it is taken again.
std::string unpublishable(const OutboxMessage& message, int frame_max) {
    // The header frame's fixed part, the flags, content type, delivery mode and message id.
    size_t size = 8 + 14 + 2 + 1 + std::strlen(message.content_type()) + 1 + 1 + message.id.size();
    if (!message.headers.empty()) {
        size += 4;
    }
    for (const auto& [name, value] : message.headers) {
        if (name.size() > 255) {
            return "header name of " + std::to_string(name.size()) +
                   " bytes: AMQP allows 255 at most";
        }
        size += 1 + name.size() + 1 + 4 + value.size();
    }
    if (size > static_cast<size_t>(frame_max)) {
        return "headers too large for one AMQP frame (" + std::to_string(size) + " of " +
               std::to_string(frame_max) + " bytes)";
    }
    return "";
}

// What OpenSSL said last, as " (reason)", or "": rabbitmq-c reports a TLS failure after the
// handshake (TLS 1.3 ends it before the broker checks the relay's certificate) only as "a SSL
// error occurred". Clears OpenSSL's errors, so that none is reported twice.
std::string tls_reason() {
    unsigned long code = ERR_peek_last_error();
    const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
    ERR_clear_error();
    return reason != nullptr ? std::string(" (") + reason + ")" : "";
}

// Holds the connection's writes back until a whole batch is written (TCP_CORK), or lets them go:
// the broker then reads a batch in full segments, a few reads for hundreds of messages, where
// each message went out in a segment of its own.
void hold_writes(amqp_connection_state_t connection, bool hold) {
    int value = hold ? 1 : 0;
    int socket = amqp_get_sockfd(connection);
    if (socket >= 0) setsockopt(socket, IPPROTO_TCP, TCP_CORK, &value, sizeof value);
}

}  // namespace

AmqpSink::AmqpSink(const RelayOptions& options)
    : heartbeat_seconds_(options.heartbeat_seconds),
      ca_file_(options.amqp_ca),
      cert_file_(options.amqp_cert),
      key_file_(options.amqp_key),
      mandatory_(options.fail_unroutable) {
    const std::string& url = options.amqp_url;
    // amqp_parse_url points into the buffer it is given, and writes into it.
    std::string buffer = url;
    amqp_connection_info info;
    amqp_default_connection_info(&info);
    if (amqp_parse_url(buffer.data(), &info) != AMQP_STATUS_OK) {
        throw std::invalid_argument("--amqp: '" + url +
                                    "' is not amqp[s]://user:password@host:port/vhost");
    }
    tls_ = info.ssl != 0;  // amqps://, whose port is 5671 unless given
    host_ = info.host;
    port_ = info.port;
    user_ = info.user;
    password_ = info.password;
    // "amqp://host/" names the vhost "" by the URI spec, which no broker has: it means "/", as
    // most clients take it.
    vhost_ = *info.vhost != '\0' ? info.vhost : "/";
}

AmqpSink::~AmqpSink() {
    disconnect();
}

std::string AmqpSink::describe() const {
    return (tls_ ? "amqps://" : "amqp://") + user_ + "@" + host_ + ":" + std::to_string(port_) +
           "/" + (vhost_ == "/" ? "" : vhost_);
}

void AmqpSink::connect() {
    disconnect();
    connection_ = amqp_new_connection();
    amqp_socket_t* socket = new_socket();
    timeval timeout{.tv_sec = 5, .tv_usec = 0};
    if (int status = amqp_socket_open_noblock(socket, host_.c_str(), port_, &timeout);
        status != AMQP_STATUS_OK) {
        give_up(std::string("cannot connect: ") + amqp_error_string2(status));
    }
    // rabbitmq-c serves heartbeats only inside its calls: an idle relay calls keep_alive.
    std::string error =
        reply_error(amqp_login(connection_, vhost_.c_str(), 0, 131072, heartbeat_seconds_,
                               AMQP_SASL_METHOD_PLAIN, user_.c_str(), password_.c_str()));
    if (!error.empty()) {
        std::string reason = tls_ ? tls_reason() : "";
        give_up("login refused: " + error + reason);
    }
    open_channel();
}

amqp_socket_t* AmqpSink::new_socket() {
    amqp_socket_t* socket =
        tls_ ? amqp_ssl_socket_new(connection_) : amqp_tcp_socket_new(connection_);
    if (socket == nullptr) {
        give_up("could not create a socket");
    }
    if (!tls_) return socket;
    // Never a broker whose certificate no trusted CA signed, or made out to another host.
    amqp_ssl_socket_set_verify_peer(socket, 1);
    amqp_ssl_socket_set_verify_hostname(socket, 1);
    bool trusted = ca_file_.empty()
                       ? SSL_CTX_set_default_verify_paths(
                             static_cast<SSL_CTX*>(amqp_ssl_socket_get_context(socket))) == 1
                       : amqp_ssl_socket_set_cacert(socket, ca_file_.c_str()) == AMQP_STATUS_OK;
    if (!trusted) {
        give_up("cannot read the CA certificates " +
                (ca_file_.empty() ? std::string("of the system") : "in " + ca_file_));
    }
    // For a broker that asks for the client's certificate; it also checks that the key is the
    // certificate's.
    if (!cert_file_.empty() &&
        amqp_ssl_socket_set_key(socket, cert_file_.c_str(), key_file_.c_str()) != AMQP_STATUS_OK) {
        give_up("cannot use the certificate " + cert_file_ + " with the key " + key_file_ +
                " (unreadable, not PEM, or not the certificate's key)");
    }
    return socket;
}

void AmqpSink::open_channel() {
    amqp_channel_open(connection_, channel);
    std::string error = reply_error(amqp_get_rpc_reply(connection_));
    if (error.empty()) {
        amqp_confirm_select(connection_, channel);
        error = reply_error(amqp_get_rpc_reply(connection_));
    }
    if (!error.empty()) {
        give_up("cannot open a channel with publisher confirms: " + error);
    }
    channel_open_ = true;
    next_delivery_tag_ = 1;
}

void AmqpSink::disconnect() {
    if (connection_ != nullptr) {
        amqp_destroy_connection(connection_);
        connection_ = nullptr;
    }
    channel_open_ = false;
    known_exchanges_.clear();
    awaited_.clear();
    return_reason_.clear();
    returned_.clear();
}

void AmqpSink::give_up(const std::string& why) {
    disconnect();
    throw SinkError(why);
}

std::string AmqpSink::reply_error(amqp_rpc_reply_t reply) {
    switch (reply.reply_type) {
        case AMQP_RESPONSE_NORMAL:
            return "";
        case AMQP_RESPONSE_NONE:
            return "no reply from the broker";
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            return amqp_error_string2(reply.library_error);
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            break;
    }
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
        amqp_channel_close_ok_t close_ok{};
        amqp_send_method(connection_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
        channel_open_ = false;
        return std::to_string(close->reply_code) + " " + text_of(close->reply_text);
    }
    if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
        amqp_connection_close_ok_t close_ok{};
        amqp_send_method(connection_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &close_ok);
        return std::to_string(close->reply_code) + " " + text_of(close->reply_text);
    }
    return "unexpected reply from the broker";
}

std::string AmqpSink::exchange_error(const std::string& exchange) {
    if (known_exchanges_.contains(exchange)) {
        return "";
    }
    while (connected() && !awaited_.empty()) {
        read_confirm();
    }
    if (!connected()) {
        return "";  // the batch stays unsent
    }
    amqp_exchange_declare(connection_, channel, bytes_of(exchange), amqp_cstring_bytes("direct"), 1,
                          0, 0, 0, amqp_empty_table);
    amqp_rpc_reply_t reply = amqp_get_rpc_reply(connection_);
    std::string error = reply_error(reply);
    if (error.empty()) {
        known_exchanges_.insert(exchange);
    } else if (reply.reply_type != AMQP_RESPONSE_SERVER_EXCEPTION ||
               reply.reply.id != AMQP_CHANNEL_CLOSE_METHOD) {
        lose_connection(error);
        return "";
    } else {
        // A missing exchange closes the channel: open another for the rest of the batch.
        try {
            open_channel();
        } catch (const SinkError& lost) {
            lose_connection(lost.what());
            return "";
        }
    }
    return error;
}

bool AmqpSink::publish_one(const OutboxMessage& message) {
    std::vector<amqp_table_entry_t> headers(message.headers.size());
    for (size_t i = 0; i < headers.size(); ++i) {
        headers[i].key = bytes_of(message.headers[i].first);
        headers[i].value.kind = AMQP_FIELD_KIND_UTF8;
        headers[i].value.value.bytes = bytes_of(message.headers[i].second);
    }
    amqp_basic_properties_t properties{};
    properties._flags =
        AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG;
    properties.content_type = amqp_cstring_bytes(message.content_type());
    properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    properties.message_id = bytes_of(message.id);
    if (!headers.empty()) {
        properties._flags |= AMQP_BASIC_HEADERS_FLAG;
        properties.headers.num_entries = static_cast<int>(headers.size());
        properties.headers.entries = headers.data();
    }
    static const std::string no_key;
    return amqp_basic_publish(connection_, channel, bytes_of(message.destination),
                              bytes_of(message.key.value_or(no_key)), mandatory_ ? 1 : 0, 0,
                              &properties, bytes_of(message.payload)) == AMQP_STATUS_OK;
}

void AmqpSink::send(std::vector<OutboxMessage> batch) {
    SentBatch& sent = start_batch(std::move(batch));
    std::map<std::string, std::string> missing_exchanges;
    for (const OutboxMessage& message : sent.messages) {
        if (connected() && !missing_exchanges.contains(message.destination)) {
            if (std::string error = exchange_error(message.destination); !error.empty()) {
                missing_exchanges[message.destination] = error;
            }
        }
    }
    // Not while each message awaits its confirm (one_at_a_time_): it would wait for the batch.
    bool held = connected() && !one_at_a_time_;
    if (held) hold_writes(connection_, true);
    for (size_t i = 0; i < sent.messages.size() && connected(); ++i) {
        if (std::string why = unpublishable(sent.messages[i], amqp_get_frame_max(connection_));
            !why.empty()) {
            sent.outcomes[i] = {Delivery::refused, why};
        } else if (auto missing = missing_exchanges.find(sent.messages[i].destination);
                   missing != missing_exchanges.end()) {
            sent.outcomes[i] = {Delivery::refused,
                                "exchange " + missing->first + ": " + missing->second};
        } else if (publish_one(sent.messages[i])) {
            uint64_t tag = next_delivery_tag_++;
            awaited_[tag] = {&sent, i};
            if (one_at_a_time_) {
                await_alone(tag, sent.outcomes[i]);
            }
        } else {
            // Nothing published on this connection will be confirmed now.
            lose_connection("connection lost while publishing");
        }
    }
    if (held && connected()) hold_writes(connection_, false);
    // A whole batch without a channel error: the batches go out pipelined again.
    if (one_at_a_time_ && connected() && !channel_error_seen_) {
        one_at_a_time_ = false;
    }
    channel_error_seen_ = false;
}

void AmqpSink::await_alone(uint64_t tag, PublishOutcome& outcome) {
    while (connected() && channel_open_ && awaited_.contains(tag)) {
        read_confirm();
    }
    if (connected() && !channel_open_) {
        // This message closed the channel (403 ACCESS_REFUSED to its exchange, say): refused by
        // itself; the rest of the batch goes on a channel of its own.
        awaited_.erase(tag);
        outcome = {Delivery::refused, "closed by the broker: " + channel_error_};
        channel_error_seen_ = true;
        try {
            open_channel();
        } catch (const SinkError& lost) {
            lose_connection(lost.what());
        }
    }
}

SentBatch AmqpSink::await_oldest() {
    // Delivery tags grow with the batches: the lowest one awaited is of the oldest batch that
    // waits for one.
    while (connected() && !awaited_.empty() &&
           awaited_.begin()->second.batch == &in_flight_.front()) {
        read_confirm();
    }
    return take_oldest();
}

void AmqpSink::settle(uint64_t tag, bool multiple, const PublishOutcome& answer) {
    // A confirm settles one delivery tag, or every tag up to it when it says "multiple".
    auto first = multiple ? awaited_.begin() : awaited_.find(tag);
    auto end = awaited_.upper_bound(tag);
    if (first == awaited_.end() || first->first > tag) {
        return;
    }
    for (auto it = first; it != end; ++it) {
        PublishOutcome& outcome = it->second.batch->outcomes[it->second.index];
        outcome = answer;
        if (!returned_.empty()) {
            // Returned before its ack: the broker acks a message it routed to no queue.
            auto returned = returned_.find(it->second.batch->messages[it->second.index].id);
            if (returned != returned_.end()) {
                outcome = {Delivery::refused, returned->second};
                returned_.erase(returned);
            }
        }
    }
    awaited_.erase(first, end);
}

void AmqpSink::note_return(const amqp_frame_t& frame) {
    if (frame.frame_type == AMQP_FRAME_METHOD) {
        const auto* returned =
            static_cast<const amqp_basic_return_t*>(frame.payload.method.decoded);
        return_reason_ = "returned by the broker: " + std::to_string(returned->reply_code) + " " +
                         text_of(returned->reply_text) + " (no queue is bound for routing key '" +
                         text_of(returned->routing_key) + "' of exchange " +
                         text_of(returned->exchange) + ")";
    } else if (!return_reason_.empty()) {
        const auto* properties =
            static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded);
        if ((properties->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0) {
            returned_[text_of(properties->message_id)] = return_reason_;
        }
        return_reason_.clear();
    }
}

void AmqpSink::keep_alive() {
    // While confirms are awaited, reading them serves the heartbeats.
    if (!connected() || !awaited_.empty()) return;
    // Every half interval, as RabbitMQ sends its own (rabbitmq-c would wait a whole one from the
    // last frame sent, and the broker gives up after two intervals of silence: a relay that the
    // machine's load holds back half an interval would lose its connection).
    auto now = std::chrono::steady_clock::now();
    if (heartbeat_seconds_ > 0 &&
        now - heartbeat_sent_ >= std::chrono::duration<double>(heartbeat_seconds_ / 2.0)) {
        amqp_frame_t heartbeat{};
        heartbeat.frame_type = AMQP_FRAME_HEARTBEAT;
        if (int status = amqp_send_frame(connection_, &heartbeat); status != AMQP_STATUS_OK) {
            lose_connection(amqp_error_string2(status));
            return;
        }
        heartbeat_sent_ = now;
    }
    read_frame(timeval{.tv_sec = 0, .tv_usec = 0}, true);
}

double AmqpSink::keep_alive_seconds() const {
    return heartbeat_seconds_ > 0 ? heartbeat_seconds_ / 4.0 : Sink::keep_alive_seconds();
}

void AmqpSink::read_confirm() {
    read_frame(timeval{.tv_sec = confirm_timeout_seconds, .tv_usec = 0}, false);
}

void AmqpSink::read_frame(timeval timeout, bool idle) {
    amqp_maybe_release_buffers(connection_);
    amqp_frame_t frame;
    int status = amqp_simple_wait_frame_noblock(connection_, &frame, &timeout);
    if (idle && status == AMQP_STATUS_TIMEOUT) {
        return;
    }
    if (status != AMQP_STATUS_OK) {
        // Which of the rest reached a queue is unknown: they go out again.
        lose_connection(status == AMQP_STATUS_TIMEOUT
                            ? "no confirm from the broker in " +
                                  std::to_string(confirm_timeout_seconds) + " s"
                            : amqp_error_string2(status));
        return;
    }
    if (frame.frame_type == AMQP_FRAME_HEADER) {
        note_return(frame);  // a returned message's properties (its body frames are skipped)
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) {
        return;
    }
    const amqp_method_t& method = frame.payload.method;
    if (method.id == AMQP_BASIC_RETURN_METHOD) {
        note_return(frame);
    } else if (method.id == AMQP_BASIC_ACK_METHOD) {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(method.decoded);
        settle(ack->delivery_tag, ack->multiple != 0, {Delivery::confirmed, ""});
    } else if (method.id == AMQP_BASIC_NACK_METHOD) {
        const auto* nack = static_cast<const amqp_basic_nack_t*>(method.decoded);
        settle(nack->delivery_tag, nack->multiple != 0,
               {Delivery::refused, "the broker refused it (basic.nack)"});
    } else if (method.id == AMQP_CHANNEL_CLOSE_METHOD ||
               method.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_rpc_reply_t reply{};
        reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
        reply.reply = method;
        std::string error = reply_error(reply);
        if (method.id == AMQP_CONNECTION_CLOSE_METHOD || !one_at_a_time_) {
            // Which publication closed the channel is not known, and the broker dropped the
            // ones after it: all go again, and the batches after this one go out a message at
            // a time, each awaiting its confirm, until one has no channel error.
            one_at_a_time_ = method.id == AMQP_CHANNEL_CLOSE_METHOD;
            lose_connection("closed by the broker: " + error);
        } else {
            channel_error_ = error;  // await_alone refuses the message it awaits
        }
    }
}

void AmqpSink::lose_connection(const std::string& reason) {
    for (SentBatch& sent : in_flight_) {
        for (PublishOutcome& outcome : sent.outcomes) {
            if (outcome.delivery == Delivery::unsent) {
                outcome.error = reason;
            }
        }
    }
    disconnect();
}

}  // namespace inbox_relay
