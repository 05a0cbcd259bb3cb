// inbox-relay: publishes the outbox of an inbox database to RabbitMQ or an HTTP endpoint. The
// loop: take a batch (inbox.relay_take) and publish it; while the broker confirms it, take and
// publish the next; then mark done what the sink confirmed and failed what it refused. It takes
// again at once after a full batch, else waits for a notification on inbox_outbox or the poll
// timeout. At least once: a message is marked done only after the sink confirmed it, so a crash in
// between publishes it again, with the same id.
#include <algorithm>
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
#include "relay/lag_reader.hpp"
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

// relay_done for what the sink confirmed, relay_failed for the rest, one call per error text.
// Refused messages wait --retry-after; unsent ones (the sink's connection broke) are due at once.
void settle(OutboxDatabase& database, const SentBatch& sent, double retry_after_seconds) {
    std::vector<std::string> done;
    std::map<std::pair<std::string, bool>, std::vector<std::string>> failed;
    for (size_t i = 0; i < sent.messages.size(); ++i) {
        const PublishOutcome& outcome = sent.outcomes[i];
        if (outcome.delivery == Delivery::confirmed) {
            done.push_back(sent.messages[i].id);
        } else {
            failed[{outcome.error, outcome.delivery == Delivery::unsent}].push_back(
                sent.messages[i].id);
        }
    }
    if (!done.empty()) {
        database.mark_done(done);
    }
    for (const auto& [reason, ids] : failed) {
        database.mark_failed(ids, reason.first, reason.second ? 0 : retry_after_seconds);
    }
}

std::string batch_line(const SentBatch& sent) {
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - sent.sent_at;
    size_t confirmed = 0;
    std::string first_error;
    for (const PublishOutcome& outcome : sent.outcomes) {
        if (outcome.delivery == Delivery::confirmed) {
            ++confirmed;
        } else if (first_error.empty()) {
            first_error = outcome.error;
        }
    }
    size_t size = sent.messages.size();
    std::string line = "published " + std::to_string(confirmed) + " of " + std::to_string(size);
    if (confirmed > 0) {
        line +=
            " (" + count_by_destination(sent.messages, sent.outcomes, Delivery::confirmed) + ")";
    }
    if (confirmed < size) {
        line += ", failed " + std::to_string(size - confirmed) + " (" + first_error + ")";
    }
    char milliseconds[32];
    std::snprintf(milliseconds, sizeof milliseconds, " in %.0f ms", took.count());
    return line + milliseconds;
}

std::unique_ptr<Sink> make_sink(const RelayOptions& options) {
    if (!options.amqp_url.empty()) {
        return std::make_unique<AmqpSink>(options);
    }
    return std::make_unique<HttpSink>(options.http_url);
}

class Relay {
  public:
    explicit Relay(const RelayOptions& options)
        : options_(options), sink_(make_sink(options)), database_(options.database, options.name) {}

    int run() {
        print_line("inbox-relay " + options_.name + " starting");
        while (!stop_requested()) {
            // Each turn, the database's backoff (at most 10 s) included.
            sink_->keep_alive();
            // A connection lost while idle (a broker's restart, a close) is said as one lost
            // under a batch is.
            note_sink_state();
            if (!database_.connected() &&
                !reconnect(database_, database_backoff_, "the database")) {
                continue;
            }
            try {
                step();
                // The database answered a whole step: its next loss backs off from 0.1 s again.
                database_backoff_.succeeded();
            } catch (const DatabaseError& error) {
                database_.disconnect();
                database_backoff_.failed();
                print_line(std::string("lost the database: ") + error.what());
            }
        }
        finish_in_flight();
        print_line("inbox-relay " + options_.name + " stopped");
        return 0;
    }

  private:
    // Takes a batch and sends it. After a full batch the relay takes the next at once, and
    // settles the oldest once the sink's most batches in flight are out: its confirms came in
    // while the others were taken and published. Otherwise it settles what is in flight, and
    // waits for a notification when there was nothing to take.
    void step() {
        if (!sink_->connected()) {
            // What the broker answered before it went away is settled before the backoff.
            settle_in_flight(0);
            if (!reconnect(*sink_, sink_backoff_, sink_->describe())) {
                return;
            }
            sink_up_ = true;
        }
        std::vector<OutboxMessage> batch =
            database_.take(options_.batch, options_.lease_seconds, options_.destinations);
        bool full = static_cast<int>(batch.size()) == options_.batch;
        bool empty = batch.empty();
        if (!empty) {
            sink_->send(std::move(batch));
        }
        settle_in_flight(full ? sink_->most_batches_in_flight() - 1 : 0);
        if (empty) {
            database_.wait_for_notification(
                std::min(options_.poll_seconds, sink_->keep_alive_seconds()));
        }
    }

    // Awaits and settles the oldest batches until no more than `keep` are in flight.
    void settle_in_flight(size_t keep) {
        while (sink_->batches_in_flight() > keep) {
            SentBatch sent = sink_->await_oldest();
            if (note_sink_state()) {
                // The sink answered the batch: only now is it known to work. A connection alone
                // is no success: an endpoint that takes connections but fails every batch (a
                // channel error, a timeout) would be retried every 0.1 s and each retry takes
                // the messages again, which counts an attempt: dead within a second.
                sink_backoff_.succeeded();
            }
            try {
                settle(database_, sent, options_.retry_after_seconds);
            } catch (const DatabaseError&) {
                // Published but not marked: the leases expire and the messages go out again.
                print_line("could not mark " + std::to_string(sent.messages.size()) +
                           " messages: they go out again when their lease expires");
                throw;
            }
            print_line(batch_line(sent) + "; " +
                       lag_.describe([this] { return database_.read_lag(); }));
        }
    }

    // Whether the sink is up; when it went down since the last look, says so and backs off.
    bool note_sink_state() {
        if (!sink_->connected() && sink_up_) {
            sink_backoff_.failed();
            print_line("lost " + sink_->describe() + "; again in " +
                       seconds_text(sink_backoff_.delay_seconds()));
        }
        sink_up_ = sink_->connected();
        return sink_up_;
    }

    // SIGTERM: the batches in flight are confirmed and settled before the relay exits.
    void finish_in_flight() {
        try {
            if (database_.connected()) {
                settle_in_flight(0);
            }
        } catch (const DatabaseError& error) {
            print_line(std::string("lost the database: ") + error.what());
        }
    }

    // Connects a side that is down, after its backoff delay; false when it is still down. The
    // delay is reset when the side has worked (a step or a batch done), not at the connection.
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
            print_line("connected to " + side.describe());
            return true;
        } catch (const std::runtime_error& error) {
            backoff.failed();
            print_line("cannot reach " + what + ": " + error.what() + "; again in " +
                       seconds_text(backoff.delay_seconds()));
            return false;
        }
    }

    const RelayOptions& options_;
    std::unique_ptr<Sink> sink_;
    OutboxDatabase database_;
    Backoff database_backoff_;
    Backoff sink_backoff_;
    bool sink_up_ = false;  // the sink was connected when last looked at
    LagReader lag_;
};

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
        return Relay(options).run();
    } catch (const std::invalid_argument& error) {
        std::fprintf(stderr, "inbox-relay: %s\n", error.what());
        return 2;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "inbox-relay: %s\n", error.what());
        return 1;
    }
}
