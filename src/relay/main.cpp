// inbox-relay: publishes the outbox of an inbox database to RabbitMQ or an HTTP endpoint. The
// loop: take a batch (inbox.relay_take), publish it, mark done what the sink confirmed and failed
// what it refused; take again at once after a full batch, else wait for a notification on
// inbox_outbox or the poll timeout. At least once: a message is marked done only after the sink
// confirmed it, so a crash in between publishes it again, with the same id.
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>

#include <curl/curl.h>

#include "relay/amqp_sink.hpp"
#include "relay/backoff.hpp"
#include "relay/batch_report.hpp"
#include "relay/http_sink.hpp"
#include "relay/options.hpp"
#include "relay/outbox_database.hpp"
#include "relay/output.hpp"
#include "relay/stop_signal.hpp"

namespace inbox_relay {
namespace {

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", seconds);
    return text;
}

// Connects a side that is down, after its backoff delay; false when it is still down.
template <typename Side>
bool reconnect(Side& side, Backoff& backoff, const std::string& what) {
    if (backoff.delay_seconds() > 0) {
        wait_readable_or_stop(-1, backoff.delay_seconds());
        if (stop_requested()) {
            return false;
        }
    }
    try {
        side.connect();
        backoff.succeeded();
        print_line("connected to " + side.describe());
        return true;
    } catch (const std::runtime_error& error) {
        backoff.failed();
        print_line("cannot reach " + what + ": " + error.what() + "; again in " +
                   seconds_text(backoff.delay_seconds()));
        return false;
    }
}

// relay_done for what the sink confirmed, relay_failed for the rest, one call per error text.
// Refused messages wait --retry-after; unsent ones (the sink's connection broke) are due at once.
void settle(OutboxDatabase& database, const std::vector<OutboxMessage>& batch,
            const std::vector<PublishOutcome>& outcomes, double retry_after_seconds) {
    std::vector<std::string> done;
    std::map<std::pair<std::string, bool>, std::vector<std::string>> failed;
    for (size_t i = 0; i < batch.size(); ++i) {
        if (outcomes[i].delivery == Delivery::confirmed) {
            done.push_back(batch[i].id);
        } else {
            failed[{outcomes[i].error, outcomes[i].delivery == Delivery::unsent}].push_back(
                batch[i].id);
        }
    }
    if (!done.empty()) {
        database.mark_done(done);
    }
    for (const auto& [reason, ids] : failed) {
        database.mark_failed(ids, reason.first, reason.second ? 0 : retry_after_seconds);
    }
}

std::string batch_line(const std::vector<OutboxMessage>& batch,
                       const std::vector<PublishOutcome>& outcomes, double milliseconds) {
    size_t confirmed = 0;
    std::string first_error;
    for (const PublishOutcome& outcome : outcomes) {
        if (outcome.delivery == Delivery::confirmed) {
            ++confirmed;
        } else if (first_error.empty()) {
            first_error = outcome.error;
        }
    }
    std::string line =
        "published " + std::to_string(confirmed) + " of " + std::to_string(batch.size());
    if (confirmed > 0) {
        line += " (" + count_by_destination(batch, outcomes, Delivery::confirmed) + ")";
    }
    if (confirmed < batch.size()) {
        line += ", failed " + std::to_string(batch.size() - confirmed) + " (" + first_error + ")";
    }
    char took[32];
    std::snprintf(took, sizeof took, " in %.0f ms", milliseconds);
    return line + took;
}

std::unique_ptr<Sink> make_sink(const RelayOptions& options) {
    if (!options.amqp_url.empty()) {
        return std::make_unique<AmqpSink>(options.amqp_url);
    }
    return std::make_unique<HttpSink>(options.http_url);
}

int run(const RelayOptions& options) {
    std::unique_ptr<Sink> sink = make_sink(options);
    OutboxDatabase database(options.database, options.name);
    Backoff database_backoff;
    Backoff sink_backoff;
    LagReader lag;
    print_line("inbox-relay " + options.name + " starting");
    while (!stop_requested()) {
        if (!database.connected() && !reconnect(database, database_backoff, "the database")) {
            continue;
        }
        if (!sink->connected() && !reconnect(*sink, sink_backoff, sink->describe())) {
            continue;
        }
        try {
            std::vector<OutboxMessage> batch =
                database.take(options.batch, options.lease_seconds, options.destinations);
            if (batch.empty()) {
                database.wait_for_notification(options.poll_seconds);
                continue;
            }
            auto started = std::chrono::steady_clock::now();
            std::vector<PublishOutcome> outcomes = sink->publish(batch);
            std::chrono::duration<double, std::milli> took =
                std::chrono::steady_clock::now() - started;
            if (!sink->connected()) {
                sink_backoff.failed();
                print_line("lost " + sink->describe() + "; again in " +
                           seconds_text(sink_backoff.delay_seconds()));
            }
            try {
                settle(database, batch, outcomes, options.retry_after_seconds);
            } catch (const DatabaseError&) {
                // Published but not marked: the leases expire and the messages go out again.
                print_line("could not mark " + std::to_string(batch.size()) +
                           " messages: they go out again when their lease expires");
                throw;
            }
            print_line(batch_line(batch, outcomes, took.count()) + "; " + lag.describe(database));
        } catch (const DatabaseError& error) {
            database.disconnect();
            database_backoff.failed();
            print_line(std::string("lost the database: ") + error.what());
        }
    }
    print_line("inbox-relay " + options.name + " stopped");
    return 0;
}

}  // namespace
}  // namespace inbox_relay

int main(int argc, char** argv) {
    using namespace inbox_relay;
    RelayOptions options;
    try {
        options = parse_options(argc, argv);
    } catch (const UsageError& error) {
        std::fprintf(stderr, "inbox-relay: %s\n", error.what());
        return 2;
    }
    if (options.help) {
        std::fputs(usage_text().c_str(), stdout);
        return 0;
    }
    try {
        install_stop_signal();
        curl_global_init(CURL_GLOBAL_DEFAULT);
        return run(options);
    } catch (const std::invalid_argument& error) {
        std::fprintf(stderr, "inbox-relay: %s\n", error.what());
        return 2;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "inbox-relay: %s\n", error.what());
        return 1;
    }
}
