// The two baselines of test/bench/relay_throughput.sh, with the libraries inbox-relay uses
// (libpq, rabbitmq-c), publishing with publisher confirms in batches as it does:
//   relay_baselines hand-relay CONNINFO AMQP_PORT EXCHANGE BATCH
//       a hand-written outbox relay: BEGIN; SELECT ... FOR UPDATE SKIP LOCKED LIMIT BATCH from
//       bench_outbox; publish; wait for the confirms; DELETE them; COMMIT; until the table is empty
//   relay_baselines broker-limit AMQP_PORT EXCHANGE BATCH COUNT PAYLOAD
//       the broker's own limit: COUNT copies of PAYLOAD in batches, confirms awaited, no database
#include "relay/rabbitmq.hpp"
#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

class ConfirmingChannel {
  public:
    ConfirmingChannel(int port, std::string exchange) : exchange_(std::move(exchange)) {
        connection_ = amqp_new_connection();
        amqp_socket_t* socket = amqp_tcp_socket_new(connection_);
        if (amqp_socket_open(socket, "127.0.0.1", port) != AMQP_STATUS_OK) {
            throw std::runtime_error("cannot connect to RabbitMQ");
        }
        check(amqp_login(connection_, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"));
        amqp_channel_open(connection_, 1);
        check(amqp_get_rpc_reply(connection_));
        amqp_confirm_select(connection_, 1);
        check(amqp_get_rpc_reply(connection_));
    }
    ~ConfirmingChannel() { amqp_destroy_connection(connection_); }

    void publish(const std::string& id, const std::string& body) {
        amqp_basic_properties_t properties{};
        properties._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
                            AMQP_BASIC_MESSAGE_ID_FLAG;
        properties.content_type = amqp_cstring_bytes("application/json");
        properties.delivery_mode = AMQP_DELIVERY_PERSISTENT;
        properties.message_id = amqp_cstring_bytes(id.c_str());
        if (amqp_basic_publish(connection_, 1, amqp_cstring_bytes(exchange_.c_str()),
                               amqp_empty_bytes, 0, 0, &properties,
                               amqp_bytes_t{.len = body.size(), .bytes = (void*)body.data()}) !=
            AMQP_STATUS_OK) {
            throw std::runtime_error("publish failed");
        }
        ++published_;
    }

    // Waits until the broker acked every publication so far.
    void await_confirms() {
        while (acked_ < published_) {
            amqp_maybe_release_buffers(connection_);
            amqp_frame_t frame;
            if (amqp_simple_wait_frame(connection_, &frame) != AMQP_STATUS_OK) {
                throw std::runtime_error("connection lost");
            }
            if (frame.frame_type == AMQP_FRAME_METHOD &&
                frame.payload.method.id == AMQP_BASIC_ACK_METHOD) {
                const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
                acked_ = ack->multiple ? ack->delivery_tag : acked_ + 1;
            } else if (frame.frame_type == AMQP_FRAME_METHOD) {
                throw std::runtime_error("not an ack");
            }
        }
    }

  private:
    static void check(amqp_rpc_reply_t reply) {
        if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
            throw std::runtime_error("RabbitMQ refused");
        }
    }

    std::string exchange_;
    amqp_connection_state_t connection_;
    uint64_t published_ = 0;
    uint64_t acked_ = 0;
};

void run(PGconn* db, const char* statement) {
    PGresult* result = PQexec(db, statement);
    if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK) {
        throw std::runtime_error(PQerrorMessage(db));
    }
    PQclear(result);
}

int hand_relay(const char* conninfo, int port, const char* exchange, int batch) {
    PGconn* db = PQconnectdb(conninfo);
    if (PQstatus(db) != CONNECTION_OK) {
        throw std::runtime_error(PQerrorMessage(db));
    }
    ConfirmingChannel channel(port, exchange);
    std::string take =
        "SELECT id, payload::text FROM bench_outbox ORDER BY id "
        "FOR UPDATE SKIP LOCKED LIMIT " +
        std::to_string(batch);
    for (;;) {
        run(db, "BEGIN");
        PGresult* rows = PQexec(db, take.c_str());
        if (PQresultStatus(rows) != PGRES_TUPLES_OK) {
            throw std::runtime_error(PQerrorMessage(db));
        }
        int count = PQntuples(rows);
        std::string ids = "{";
        for (int row = 0; row < count; ++row) {
            channel.publish(PQgetvalue(rows, row, 0), PQgetvalue(rows, row, 1));
            ids += (row ? "," : "") + std::string(PQgetvalue(rows, row, 0));
        }
        PQclear(rows);
        channel.await_confirms();
        ids += "}";
        const char* values[] = {ids.c_str()};
        PGresult* deleted =
            PQexecParams(db, "DELETE FROM bench_outbox WHERE id = ANY($1::bigint[])", 1, nullptr,
                         values, nullptr, nullptr, 0);
        PQclear(deleted);
        run(db, "COMMIT");
        if (count == 0) {
            break;
        }
    }
    PQfinish(db);
    return 0;
}

int broker_limit(int port, const char* exchange, int batch, int count, const std::string& body) {
    ConfirmingChannel channel(port, exchange);
    for (int sent = 0; sent < count;) {
        for (int i = 0; i < batch && sent < count; ++i, ++sent) {
            channel.publish(std::to_string(sent), body);
        }
        channel.await_confirms();
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "hand-relay" && argc == 6) {
            return hand_relay(argv[2], std::atoi(argv[3]), argv[4], std::atoi(argv[5]));
        }
        if (mode == "broker-limit" && argc == 7) {
            return broker_limit(std::atoi(argv[2]), argv[3], std::atoi(argv[4]), std::atoi(argv[5]),
                                argv[6]);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "relay_baselines: %s\n", error.what());
        return 1;
    }
    std::fprintf(stderr, "usage: see the comment at the top of relay_baselines.cpp\n");
    return 2;
}
