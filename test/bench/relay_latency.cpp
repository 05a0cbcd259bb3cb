// The producer, the consumer and the arithmetic of test/bench/relay_latency.sh. Times are
// CLOCK_REALTIME in microseconds (exact in a double, for awk and for the sort here): the producer
// and the consumer run on one machine, so their clocks are one clock.
//   relay_latency produce CONNINFO DESTINATION RATE SECONDS OUT
//       commits one transaction a message (SELECT inbox.send(DESTINATION, '{"seq": N, ...}'),
//       autocommit: the statement is the transaction), the Nth due at start + N / RATE on a
//       monotonic schedule (one sent late does not push the next ones back); writes "N time" a
//       line to OUT, the time taken when the commit returned; prints the rate achieved
//   relay_latency consume AMQP_PORT EXCHANGE OUT
//       declares EXCHANGE (fanout, durable) and a durable queue of the same name bound to it,
//       purges the queue, creates OUT.ready, then consumes (no acks) until SIGTERM; writes
//       "N time" a line to OUT, the time each message was received
//   relay_latency report WARMUP COMMITS ARRIVALS [COMMITS ARRIVALS ...]
//       matches each pair by N, drops the messages committed in the first WARMUP seconds of their
//       pair, and prints "count p50 p90 p99 max missing" of arrival - commit in milliseconds over
//       all pairs (missing: committed after the warm-up, never received)
#include "relay/rabbitmq.hpp"
#include <libpq-fe.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

extern "C" void request_stop(int) {
    stop_requested = 1;
}

int64_t clock_us(clockid_t clock) {
    timespec now{};
    clock_gettime(clock, &now);
    return int64_t{now.tv_sec} * 1000000 + now.tv_nsec / 1000;
}

void write_pairs(const std::string& path, const std::vector<std::pair<long, int64_t>>& pairs) {
    std::FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
        throw std::runtime_error("cannot write " + path);
    }
    for (const auto& [seq, time] : pairs) {
        std::fprintf(out, "%ld %lld\n", seq, static_cast<long long>(time));
    }
    std::fclose(out);
}

int produce(const char* conninfo, const char* destination, double rate, double seconds,
            const std::string& out) {
    PGconn* db = PQconnectdb(conninfo);
    if (PQstatus(db) != CONNECTION_OK) {
        throw std::runtime_error(PQerrorMessage(db));
    }
    PGresult* prepared = PQprepare(db, "send", "SELECT inbox.send($1, $2::jsonb)", 2, nullptr);
    if (PQresultStatus(prepared) != PGRES_COMMAND_OK) {
        throw std::runtime_error(PQerrorMessage(db));
    }
    PQclear(prepared);
    const long count = static_cast<long>(rate * seconds);
    const int64_t period_ns = static_cast<int64_t>(1e9 / rate);
    std::vector<std::pair<long, int64_t>> commits;
    commits.reserve(count);
    long late = 0;  // started more than one period after they were due
    timespec start{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    const int64_t start_ns = int64_t{start.tv_sec} * 1000000000 + start.tv_nsec;
    int64_t first_us = 0;
    for (long seq = 0; seq < count && stop_requested == 0; ++seq) {
        int64_t due_ns = start_ns + seq * period_ns;
        timespec due{.tv_sec = due_ns / 1000000000, .tv_nsec = due_ns % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr) != 0) {
        }
        if (clock_us(CLOCK_MONOTONIC) * 1000 - due_ns > period_ns) {
            ++late;
        }
        std::string payload = "{\"seq\": " + std::to_string(seq) +
                              ", \"note\": \"a message of about 100 bytes, timed\"}";
        const char* values[] = {destination, payload.c_str()};
        if (seq == 0) {
            first_us = clock_us(CLOCK_REALTIME);
        }
        PGresult* sent = PQexecPrepared(db, "send", 2, values, nullptr, nullptr, 0);
        int64_t committed = clock_us(CLOCK_REALTIME);
        if (PQresultStatus(sent) != PGRES_TUPLES_OK) {
            throw std::runtime_error(PQerrorMessage(db));
        }
        PQclear(sent);
        commits.emplace_back(seq, committed);
    }
    PQfinish(db);
    write_pairs(out, commits);
    double took = commits.empty() ? 0 : (commits.back().second - first_us) / 1e6;
    std::printf("%zu %.1f %ld\n", commits.size(), took > 0 ? commits.size() / took : 0.0, late);
    return 0;
}

void check(amqp_rpc_reply_t reply, const char* what) {
    if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
        throw std::runtime_error(std::string("RabbitMQ refused: ") + what);
    }
}

int consume(int port, const char* exchange, const std::string& out) {
    amqp_connection_state_t connection = amqp_new_connection();
    amqp_socket_t* socket = amqp_tcp_socket_new(connection);
    if (amqp_socket_open(socket, "127.0.0.1", port) != AMQP_STATUS_OK) {
        throw std::runtime_error("cannot connect to RabbitMQ");
    }
    check(amqp_login(connection, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"),
          "login");
    amqp_channel_open(connection, 1);
    check(amqp_get_rpc_reply(connection), "channel");
    amqp_bytes_t name = amqp_cstring_bytes(exchange);
    amqp_exchange_declare(connection, 1, name, amqp_cstring_bytes("fanout"), 0, 1, 0, 0,
                          amqp_empty_table);
    check(amqp_get_rpc_reply(connection), "exchange.declare");
    amqp_queue_declare(connection, 1, name, 0, 1, 0, 0, amqp_empty_table);
    check(amqp_get_rpc_reply(connection), "queue.declare");
    amqp_queue_bind(connection, 1, name, name, amqp_empty_bytes, amqp_empty_table);
    check(amqp_get_rpc_reply(connection), "queue.bind");
    amqp_queue_purge(connection, 1, name);
    check(amqp_get_rpc_reply(connection), "queue.purge");
    amqp_basic_consume(connection, 1, name, amqp_empty_bytes, 0, 1, 0, amqp_empty_table);
    check(amqp_get_rpc_reply(connection), "basic.consume");
    std::ofstream(out + ".ready").put('\n');

    std::vector<std::pair<long, int64_t>> arrivals;
    arrivals.reserve(1 << 20);
    while (stop_requested == 0) {
        amqp_maybe_release_buffers(connection);
        amqp_envelope_t envelope;
        timeval timeout{.tv_sec = 0, .tv_usec = 100000};
        amqp_rpc_reply_t reply = amqp_consume_message(connection, &envelope, &timeout, 0);
        if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
            reply.library_error == AMQP_STATUS_TIMEOUT) {
            continue;
        }
        check(reply, "consume");
        int64_t arrived = clock_us(CLOCK_REALTIME);
        std::string body(static_cast<const char*>(envelope.message.body.bytes),
                         envelope.message.body.len);
        amqp_destroy_envelope(&envelope);
        size_t at = body.find("\"seq\": ");
        if (at == body.npos) {
            throw std::runtime_error("a message without a seq: " + body);
        }
        arrivals.emplace_back(std::strtol(body.c_str() + at + 7, nullptr, 10), arrived);
    }
    amqp_destroy_connection(connection);
    write_pairs(out, arrivals);
    return 0;
}

std::map<long, int64_t> read_pairs(const char* path) {
    std::map<long, int64_t> pairs;
    std::ifstream in(path);
    long seq = 0;
    long long time = 0;
    while (in >> seq >> time) {
        pairs.emplace(seq, time);  // the first copy counts, should the relay send one twice
    }
    return pairs;
}

int report(double warmup_seconds, int pair_count, char** paths) {
    std::vector<double> latencies_ms;
    long missing = 0;
    for (int pair = 0; pair < pair_count; ++pair) {
        std::map<long, int64_t> commits = read_pairs(paths[2 * pair]);
        std::map<long, int64_t> arrivals = read_pairs(paths[2 * pair + 1]);
        if (commits.empty()) {
            continue;
        }
        int64_t measured_from =
            commits.begin()->second + static_cast<int64_t>(warmup_seconds * 1e6);
        for (const auto& [seq, committed] : commits) {
            if (committed < measured_from) {
                continue;
            }
            auto arrival = arrivals.find(seq);
            if (arrival == arrivals.end()) {
                ++missing;
            } else {
                latencies_ms.push_back((arrival->second - committed) / 1000.0);
            }
        }
    }
    std::sort(latencies_ms.begin(), latencies_ms.end());
    // The nearest-rank percentile: the smallest value that at least p% of the values do not exceed.
    auto percentile = [&](double p) {
        if (latencies_ms.empty()) {
            return 0.0;
        }
        size_t rank = static_cast<size_t>(std::max(1.0, std::ceil(p / 100 * latencies_ms.size())));
        return latencies_ms[std::min(rank, latencies_ms.size()) - 1];
    };
    std::printf("%zu %.2f %.2f %.2f %.2f %ld\n", latencies_ms.size(), percentile(50),
                percentile(90), percentile(99), latencies_ms.empty() ? 0.0 : latencies_ms.back(),
                missing);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGTERM, request_stop);
    std::signal(SIGINT, request_stop);
    try {
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "produce" && argc == 7) {
            return produce(argv[2], argv[3], std::atof(argv[4]), std::atof(argv[5]), argv[6]);
        }
        if (mode == "consume" && argc == 5) {
            return consume(std::atoi(argv[2]), argv[3], argv[4]);
        }
        if (mode == "report" && argc >= 5 && argc % 2 == 1) {
            return report(std::atof(argv[2]), (argc - 3) / 2, argv + 3);
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "relay_latency: %s\n", error.what());
        return 1;
    }
    std::fprintf(stderr, "usage: see the comment at the top of relay_latency.cpp\n");
    return 2;
}
