// inbox-relay's settings (SPEC 1.3: "settings also from the environment"): each option from its
// flag, else from its INBOX_RELAY_* variable; the command line wins; a command line that cannot
// run is a UsageError (exit status 2).
#include "relay/options.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

using inbox_relay::parse_options;
using inbox_relay::RelayOptions;
using inbox_relay::UsageError;

namespace {

constexpr const char* variables[] = {
    "INBOX_RELAY_DB",         "INBOX_RELAY_AMQP",         "INBOX_RELAY_HTTP",
    "INBOX_RELAY_NAME",       "INBOX_RELAY_DESTINATIONS", "INBOX_RELAY_BATCH",
    "INBOX_RELAY_LEASE",      "INBOX_RELAY_RETRY_AFTER",  "INBOX_RELAY_POLL",
    "INBOX_RELAY_UNROUTABLE", "INBOX_RELAY_AMQP_CA",      "INBOX_RELAY_HEARTBEAT",
    "INBOX_RELAY_AMQP_CERT",  "INBOX_RELAY_AMQP_KEY"};

// Each test starts from an environment without INBOX_RELAY_* variables.
class RelayOptionsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* variable : variables) unsetenv(variable);
    }
    void TearDown() override { SetUp(); }

    static RelayOptions parse(std::initializer_list<const char*> arguments) {
        std::vector<std::string> texts = {"inbox-relay"};
        texts.insert(texts.end(), arguments.begin(), arguments.end());
        std::vector<char*> argv;
        for (std::string& text : texts) argv.push_back(text.data());
        return parse_options(static_cast<int>(argv.size()), argv.data());
    }
};

TEST_F(RelayOptionsTest, CommandLineWithDefaults) {
    RelayOptions options = parse({"--db", "dbname=shop", "--amqp", "amqp://guest:guest@b:5672/"});
    EXPECT_EQ(options.database, "dbname=shop");
    EXPECT_EQ(options.amqp_url, "amqp://guest:guest@b:5672/");
    EXPECT_TRUE(options.http_url.empty());
    EXPECT_EQ(options.batch, 100);
    EXPECT_EQ(options.lease_seconds, 30);
    EXPECT_EQ(options.retry_after_seconds, 10);
    EXPECT_EQ(options.poll_seconds, 1);
    EXPECT_TRUE(options.destinations.empty());
    EXPECT_FALSE(options.name.empty());        // host:pid
    EXPECT_FALSE(options.fail_unroutable);     // dropped by the broker, as any publisher's
    EXPECT_EQ(options.heartbeat_seconds, 60);  // the broker's own default
}

TEST_F(RelayOptionsTest, Heartbeat) {
    EXPECT_EQ(parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--heartbeat", "0"}).heartbeat_seconds,
              0);
    setenv("INBOX_RELAY_HEARTBEAT", "15", 1);
    EXPECT_EQ(parse({"--db", "d", "--amqp", "amqp://g:g@b/"}).heartbeat_seconds, 15);
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--heartbeat", "1.5"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--heartbeat", "-1"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--heartbeat", "3601"}),
                 UsageError);
}

TEST_F(RelayOptionsTest, TheBrokersCertificateAuthorities) {
    EXPECT_TRUE(parse({"--db", "d", "--amqp", "amqps://g:g@b/"}).amqp_ca.empty());  // the system's
    EXPECT_EQ(parse({"--db", "d", "--amqp", "amqps://g:g@b/", "--amqp-ca", "/etc/ca.pem"}).amqp_ca,
              "/etc/ca.pem");
    setenv("INBOX_RELAY_AMQP_CA", "/etc/ca.pem", 1);
    EXPECT_EQ(parse({"--db", "d", "--amqp", "amqps://g:g@b/"}).amqp_ca, "/etc/ca.pem");
    // Without TLS a CA would verify nothing: a mistake in the URL, said at once.
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--http", "https://h"}), UsageError);
}

TEST_F(RelayOptionsTest, TheRelaysOwnCertificate) {
    RelayOptions none = parse({"--db", "d", "--amqp", "amqps://g:g@b/"});
    EXPECT_TRUE(none.amqp_cert.empty());
    EXPECT_TRUE(none.amqp_key.empty());
    RelayOptions given = parse({"--db", "d", "--amqp", "amqps://g:g@b/", "--amqp-cert",
                                "/etc/relay.pem", "--amqp-key", "/etc/relay.key"});
    EXPECT_EQ(given.amqp_cert, "/etc/relay.pem");
    EXPECT_EQ(given.amqp_key, "/etc/relay.key");
    // One without the other: a certificate cannot be shown without its key.
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqps://g:g@b/", "--amqp-cert", "/etc/relay.pem"}),
                 UsageError);
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqps://g:g@b/", "--amqp-key", "/etc/relay.key"}),
                 UsageError);
    setenv("INBOX_RELAY_AMQP_CERT", "/etc/relay.pem", 1);
    setenv("INBOX_RELAY_AMQP_KEY", "/etc/relay.key", 1);
    EXPECT_EQ(parse({"--db", "d", "--amqp", "amqps://g:g@b/"}).amqp_key, "/etc/relay.key");
    // Without TLS there is no handshake to show them in.
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/"}), UsageError);
}

TEST_F(RelayOptionsTest, Unroutable) {
    EXPECT_TRUE(
        parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--unroutable", "fail"}).fail_unroutable);
    EXPECT_FALSE(
        parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--unroutable", "drop"}).fail_unroutable);
    setenv("INBOX_RELAY_UNROUTABLE", "fail", 1);
    EXPECT_TRUE(parse({"--db", "d", "--amqp", "amqp://g:g@b/"}).fail_unroutable);
    EXPECT_FALSE(
        parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--unroutable", "drop"}).fail_unroutable);
    // An HTTP endpoint answers each message: nothing is returned there.
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h"}), UsageError);
    unsetenv("INBOX_RELAY_UNROUTABLE");
    EXPECT_THROW(parse({"--db", "d", "--amqp", "amqp://g:g@b/", "--unroutable", "yes"}),
                 UsageError);
}

TEST_F(RelayOptionsTest, EveryOptionFromTheEnvironment) {
    setenv("INBOX_RELAY_DB", "dbname=shop", 1);
    setenv("INBOX_RELAY_HTTP", "http://hooks:8080", 1);
    setenv("INBOX_RELAY_NAME", "relay-7", 1);
    setenv("INBOX_RELAY_DESTINATIONS", "orders,refunds", 1);
    setenv("INBOX_RELAY_BATCH", "250", 1);
    setenv("INBOX_RELAY_LEASE", "45", 1);
    setenv("INBOX_RELAY_RETRY_AFTER", "2.5", 1);
    setenv("INBOX_RELAY_POLL", "0.2", 1);
    RelayOptions options = parse({});
    EXPECT_EQ(options.database, "dbname=shop");
    EXPECT_EQ(options.http_url, "http://hooks:8080");
    EXPECT_EQ(options.name, "relay-7");
    EXPECT_EQ(options.destinations, (std::vector<std::string>{"orders", "refunds"}));
    EXPECT_EQ(options.batch, 250);
    EXPECT_EQ(options.lease_seconds, 45);
    EXPECT_EQ(options.retry_after_seconds, 2.5);
    EXPECT_EQ(options.poll_seconds, 0.2);
}

TEST_F(RelayOptionsTest, TheCommandLineWins) {
    setenv("INBOX_RELAY_DB", "dbname=from_environment", 1);
    setenv("INBOX_RELAY_AMQP", "amqp://guest:guest@env:5672/", 1);
    setenv("INBOX_RELAY_BATCH", "250", 1);
    RelayOptions options = parse({"--db=dbname=given", "--batch", "7", "--http", "http://h"});
    EXPECT_EQ(options.database, "dbname=given");
    EXPECT_EQ(options.batch, 7);
    // A sink on the command line replaces the environment's, even the other kind.
    EXPECT_EQ(options.http_url, "http://h");
    EXPECT_TRUE(options.amqp_url.empty());
}

TEST_F(RelayOptionsTest, AnEmptyVariableIsNotASetting) {
    setenv("INBOX_RELAY_BATCH", "", 1);
    EXPECT_EQ(parse({"--db", "d", "--http", "http://h"}).batch, 100);
}

TEST_F(RelayOptionsTest, CommandLinesThatCannotRun) {
    EXPECT_THROW(parse({"--http", "http://h"}), UsageError);  // no database
    EXPECT_THROW(parse({"--db", "d"}), UsageError);           // no sink
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--amqp", "amqp://g:g@b/"}),
                 UsageError);  // two sinks
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--bogus", "1"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--http"}), UsageError);  // no value
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--batch", "0"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--lease", "-1"}), UsageError);
    // a lease PostgreSQL would read as 0 (the relay sends seconds with six decimals)
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--lease", "1e-9"}), UsageError);
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h", "--destinations", "a,,b"}), UsageError);
    setenv("INBOX_RELAY_POLL", "soon", 1);
    EXPECT_THROW(parse({"--db", "d", "--http", "http://h"}), UsageError);  // a bad variable too
}

TEST_F(RelayOptionsTest, ABadVariableIsNamedInTheMessage) {
    setenv("INBOX_RELAY_BATCH", "abc", 1);
    try {
        parse({"--db", "d", "--http", "http://h"});
        FAIL() << "INBOX_RELAY_BATCH=abc was accepted";
    } catch (const UsageError& error) {
        EXPECT_NE(std::string(error.what()).find("(from INBOX_RELAY_BATCH)"), std::string::npos)
            << error.what();
    }
}

}  // namespace
