#include "relay/options.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <vector>

namespace inbox_relay {
namespace {

// One option: its flag, the variable that gives it when the flag is absent, and where it goes.
struct OptionSpec {
    std::string_view flag;
    std::string_view variable;
    std::string_view argument;
    std::string_view meaning;
    std::function<void(RelayOptions&, const std::string&)> set;
};

double parse_seconds(std::string_view flag, const std::string& text) {
    char* end = nullptr;
    double seconds = std::strtod(text.c_str(), &end);
    // From a millisecond: a shorter one reaches PostgreSQL as an interval of 0 (it keeps
    // microseconds, the relay sends six decimals), which relay_take refuses at every take.
    if (text.empty() || *end != '\0' || !std::isfinite(seconds) || seconds < 0.001 ||
        seconds > 86400) {
        throw UsageError(std::string(flag) + " must be a number of seconds from 0.001 to " +
                         "86400, not '" + text + "'");
    }
    return seconds;
}

bool parse_unroutable(const std::string& text) {
    if (text != "drop" && text != "fail") {
        throw UsageError("--unroutable must be drop or fail, not '" + text + "'");
    }
    return text == "fail";
}

// A whole number from low to high; `what` names it in the error ("a whole number of seconds").
int parse_whole(std::string_view flag, std::string_view what, const std::string& text, long low,
                long high) {
    char* end = nullptr;
    long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < low || value > high) {
        throw UsageError(std::string(flag) + " must be " + std::string(what) + " from " +
                         std::to_string(low) + " to " + std::to_string(high) + ", not '" + text +
                         "'");
    }
    return static_cast<int>(value);
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (size_t comma = text.find(','); start <= text.size(); comma = text.find(',', start)) {
        std::string item = text.substr(start, comma == text.npos ? text.npos : comma - start);
        if (item.empty()) {
            throw UsageError("--destinations: empty name in '" + text + "'");
        }
        items.push_back(item);
        start = comma == text.npos ? text.size() + 1 : comma + 1;
    }
    return items;
}

const std::vector<OptionSpec>& option_specs() {
    static const std::vector<OptionSpec> specs = {
        {"--db", "INBOX_RELAY_DB", "CONNINFO",
         "the database whose outbox to publish (a libpq connection string or URI);\n"
         "its role needs inbox.grant_access(role, 'relay'), and 'monitor' to show the lag",
         [](RelayOptions& o, const std::string& v) { o.database = v; }},
        {"--amqp", "INBOX_RELAY_AMQP", "URL",
         "publish to RabbitMQ (amqp://user:password@host:port/vhost, or amqps://\n"
         "for TLS): exchange = the destination, routing key = the key, persistent,\n"
         "with publisher confirms",
         [](RelayOptions& o, const std::string& v) { o.amqp_url = v; }},
        {"--amqp-ca", "INBOX_RELAY_AMQP_CA", "FILE",
         "amqps://: verify the broker's certificate (its chain and its host name)\n"
         "with the CA certificates in FILE (PEM; default: the system's)",
         [](RelayOptions& o, const std::string& v) { o.amqp_ca = v; }},
        {"--amqp-cert", "INBOX_RELAY_AMQP_CERT", "FILE",
         "amqps://: the relay's certificate (PEM, with its chain), for a broker that\n"
         "asks for one (mutual TLS); with --amqp-key",
         [](RelayOptions& o, const std::string& v) { o.amqp_cert = v; }},
        {"--amqp-key", "INBOX_RELAY_AMQP_KEY", "FILE",
         "the private key of --amqp-cert (PEM, unencrypted)",
         [](RelayOptions& o, const std::string& v) { o.amqp_key = v; }},
        {"--http", "INBOX_RELAY_HTTP", "URL",
         "or POST each message to URL/<destination>, its id in Idempotency-Key",
         [](RelayOptions& o, const std::string& v) { o.http_url = v; }},
        {"--name", "INBOX_RELAY_NAME", "NAME",
         "the relay's name, shown as leased_by in inbox.outbox (default: host:pid)",
         [](RelayOptions& o, const std::string& v) { o.name = v; }},
        {"--destinations", "INBOX_RELAY_DESTINATIONS", "LIST",
         "publish only these destinations (comma-separated; default: all), so that\n"
         "relays with different sinks can serve one database",
         [](RelayOptions& o, const std::string& v) { o.destinations = split_list(v); }},
        {"--batch", "INBOX_RELAY_BATCH", "N", "messages taken at a time (default 100)",
         [](RelayOptions& o, const std::string& v) {
             o.batch = parse_whole("--batch", "a whole number", v, 1, 10000);
         }},
        {"--lease", "INBOX_RELAY_LEASE", "SECONDS",
         "how long a batch is ours to publish; then another relay may take it\n"
         "(default 30)",
         [](RelayOptions& o, const std::string& v) {
             o.lease_seconds = parse_seconds("--lease", v);
         }},
        {"--retry-after", "INBOX_RELAY_RETRY_AFTER", "SECONDS",
         "how long a message the sink refused waits before it is taken again\n"
         "(default 10)",
         [](RelayOptions& o, const std::string& v) {
             o.retry_after_seconds = parse_seconds("--retry-after", v);
         }},
        {"--poll", "INBOX_RELAY_POLL", "SECONDS",
         "the longest wait for a notification; then the outbox is looked at anyway,\n"
         "for expired leases, retries that are due and the messages of prepared\n"
         "transactions, which notify nothing (default 1)",
         [](RelayOptions& o, const std::string& v) {
             o.poll_seconds = parse_seconds("--poll", v);
         }},
        {"--unroutable", "INBOX_RELAY_UNROUTABLE", "drop|fail",
         "RabbitMQ: what becomes of a message that no queue is bound for. drop\n"
         "(default): the broker acks it and drops it, as any publisher's; the message\n"
         "is delivered. fail: it is published mandatory, returned by the broker\n"
         "(312 NO_ROUTE) and failed, taken again after --retry-after, dead after\n"
         "inbox.outbox_max_attempts",
         [](RelayOptions& o, const std::string& v) { o.fail_unroutable = parse_unroutable(v); }},
        {"--heartbeat", "INBOX_RELAY_HEARTBEAT", "SECONDS",
         "RabbitMQ: AMQP heartbeats (default 60, as the broker's; 0: none), so that\n"
         "a connection lost while the relay is idle shows, and one idle behind a\n"
         "firewall or load balancer is kept",
         [](RelayOptions& o, const std::string& v) {
             o.heartbeat_seconds =
                 parse_whole("--heartbeat", "a whole number of seconds", v, 0, 3600);
         }},
    };
    return specs;
}

std::string default_name() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) {
        host[0] = '\0';
    }
    return std::string(host[0] != '\0' ? host : "relay") + ":" + std::to_string(getpid());
}

}  // namespace

std::string usage_text() {
    std::string text =
        "Usage: inbox-relay --db CONNINFO (--amqp URL | --http URL) [OPTION ...]\n"
        "Publishes the messages that inbox.send wrote, once their transaction committed, and\n"
        "marks them delivered once the broker or endpoint confirmed them (at least once: the\n"
        "message id goes with every copy, for the downstream inbox to absorb a resend).\n\n";
    for (const OptionSpec& spec : option_specs()) {
        text += "  " + std::string(spec.flag) + " " + std::string(spec.argument) + "  (or " +
                std::string(spec.variable) + ")\n";
        std::string_view meaning = spec.meaning;
        for (size_t end = meaning.find('\n'); !meaning.empty(); end = meaning.find('\n')) {
            text += "      " + std::string(meaning.substr(0, end)) + "\n";
            meaning.remove_prefix(end == meaning.npos ? meaning.size() : end + 1);
        }
    }
    text +=
        "  --help\n      this text\n\nStops after the batches in flight on SIGTERM or SIGINT.\n";
    return text;
}

RelayOptions parse_options(int argc, char** argv) {
    RelayOptions options;
    std::vector<bool> given(option_specs().size(), false);
    for (int i = 1; i < argc; ++i) {
        std::string argument = argv[i];
        if (argument == "--help" || argument == "-h") {
            options.help = true;
            return options;
        }
        std::string value;
        bool has_value = false;
        if (auto equals = argument.find('=');
            argument.starts_with("--") && equals != argument.npos) {
            value = argument.substr(equals + 1);
            argument.resize(equals);
            has_value = true;
        }
        size_t index = 0;
        while (index < option_specs().size() && option_specs()[index].flag != argument) {
            ++index;
        }
        if (index == option_specs().size()) {
            throw UsageError("unknown option '" + argument + "' (inbox-relay --help)");
        }
        if (!has_value) {
            if (i + 1 == argc) {
                throw UsageError(argument + " needs a value (inbox-relay --help)");
            }
            value = argv[++i];
        }
        option_specs()[index].set(options, value);
        given[index] = true;
    }
    // A sink on the command line replaces the environment's, whichever of the two that names.
    bool sink_given = !options.amqp_url.empty() || !options.http_url.empty();
    for (size_t index = 0; index < option_specs().size(); ++index) {
        const OptionSpec& spec = option_specs()[index];
        bool is_sink = spec.flag == "--amqp" || spec.flag == "--http";
        const char* from_environment = std::getenv(std::string(spec.variable).c_str());
        if (!given[index] && !(is_sink && sink_given) && from_environment != nullptr &&
            *from_environment != '\0') {
            try {
                spec.set(options, from_environment);
            } catch (const UsageError& error) {
                // The variable is what to fix, not the flag the message names.
                throw UsageError(std::string(error.what()) + " (from " +
                                 std::string(spec.variable) + ")");
            }
        }
    }
    if (options.database.empty()) {
        throw UsageError("no database: give --db CONNINFO or INBOX_RELAY_DB (inbox-relay --help)");
    }
    if (options.amqp_url.empty() == options.http_url.empty()) {
        throw UsageError("give exactly one sink: --amqp URL or --http URL (inbox-relay --help)");
    }
    bool tls = options.amqp_url.starts_with("amqps://");
    for (const auto& [flag, value] : {std::pair{"--amqp-ca", &options.amqp_ca},
                                      {"--amqp-cert", &options.amqp_cert},
                                      {"--amqp-key", &options.amqp_key}}) {
        if (!value->empty() && !tls) {
            throw UsageError(std::string(flag) + " is for an amqps:// URL (TLS)");
        }
    }
    if (options.amqp_cert.empty() != options.amqp_key.empty()) {
        throw UsageError("--amqp-cert and --amqp-key go together: the certificate and its key");
    }
    if (options.fail_unroutable && options.amqp_url.empty()) {
        throw UsageError("--unroutable fail is for --amqp: an HTTP endpoint answers each message");
    }
    if (options.name.empty()) {
        options.name = default_name();
    }
    return options;
}

}  // namespace inbox_relay
