// An idempotent consumer with inbox, in C++ (libpqxx 6.4 to 8; Debian: libpqxx-dev).
//
// Applies payment messages to account balances exactly once, however often the broker delivers
// them. The loop is broker-agnostic: broker stands in for your broker's client. Each batch is one
// transaction: inbox.apply_batch claims every message and runs the handler apply_payment(jsonb)
// for the new ones, each in a subtransaction of its own. After the commit, each message is acked,
// nacked (its handler failed: the broker delivers it again) or dead-lettered (it failed
// max_attempts times: poisoned). The transaction is retried on serialization failures (40001)
// and deadlocks (40P01).
//
// The database: examples/schema.sql (the table examples.accounts, the handler
// examples.apply_payment(jsonb), the consumer examples.payments with max_attempts 3). It connects
// with the PG* environment variables. After the set-up of examples/README.md, from the top of the
// tree (without make: g++ -std=c++20 -o consumer consumer.cpp -lpqxx -lpq; libpqxx 8 needs C++20):
//
//     make -C examples/cpp
//     export PGHOST=localhost PGDATABASE=inbox_examples
//     export PGUSER=inbox_example PGPASSWORD=inbox_example
//     examples/cpp/consumer
//
// prints (each payment processed once, the copies acked as duplicates, the malformed payment
// failed three times and then dead-lettered):
//
//     delivered=156 processed=120 duplicate=32 failed=3 poisoned=1 retries=0
//     balances: acct-0=11524 acct-1=11972 acct-2=11860 acct-3=11748 acct-4=11636

#include <cstdio>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace {

const char* const consumer_name = "examples.payments";
const char* const handler = "examples.apply_payment(jsonb)";
constexpr int max_transaction_attempts = 5;

// A message as the broker hands it over: its id and its JSON body.
struct message {
    std::string id;
    std::string body;
};

// ---------------------------------------------------------------------------- the inbox

// A JSON string literal.
std::string json_string(const std::string& text) {
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') {
            quoted += '\\';
            quoted += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            quoted += escaped;
        } else {
            quoted += c;
        }
    }
    return quoted + "\"";
}

// One transaction: each message's outcome, in the order of the batch (processed, duplicate,
// failed or poisoned).
std::vector<std::string> apply_batch(pqxx::connection& conn, const std::vector<message>& batch) {
    std::string messages = "[";
    for (const auto& m : batch) {
        if (messages.size() > 1) messages += ", ";
        messages += "{\"id\": " + json_string(m.id) + ", \"payload\": " + m.body + "}";
    }
    messages += "]";

    const char* const query = "SELECT outcome FROM inbox.apply_batch($1, $2, $3)";
    pqxx::work tx(conn);
    // libpqxx 7.10 deprecates exec_params for exec with pqxx::params.
#if PQXX_VERSION_MAJOR * 100 + PQXX_VERSION_MINOR >= 710
    pqxx::result rows = tx.exec(query, pqxx::params{consumer_name, handler, messages});
#else
    pqxx::result rows = tx.exec_params(query, consumer_name, handler, messages);
#endif
    tx.commit();
    std::vector<std::string> outcomes;
    for (const auto& row : rows) outcomes.push_back(row[0].as<std::string>());
    return outcomes;
}

std::vector<std::string> apply_with_retries(pqxx::connection& conn,
                                            const std::vector<message>& batch, int& retries) {
    for (int attempt = 1;; attempt++) {
        try {
            return apply_batch(conn, batch);
        } catch (const pqxx::serialization_failure&) {
            if (attempt == max_transaction_attempts) throw;
        } catch (const pqxx::deadlock_detected&) {
            if (attempt == max_transaction_attempts) throw;
        }
        retries++;
    }
}

// What the handler made of the payments: every account's balance, in one line.
std::string balances(pqxx::connection& conn) {
    pqxx::nontransaction tx(conn);
    pqxx::result rows =
        tx.exec("SELECT string_agg(id || '=' || balance, ' ' ORDER BY id) FROM examples.accounts");
    return rows.at(0).at(0).c_str();
}

// ---------------------------------------------------------------------------- the broker

message payment(int i) {
    char id[16];
    std::snprintf(id, sizeof id, "pay-%04d", i);
    return {id, "{\"account\": \"acct-" + std::to_string(i % 5) +
                    "\", \"amount\": " + std::to_string((i * 37) % 1000 + 1) + "}"};
}

// Stands in for your broker, which delivers at least once: payments 1 to 120, every 7th one
// published twice, and one malformed payment; in batches of 10. Every 10th ack is lost, so that
// its message comes back in the next batch; a nacked message comes back later.
class broker {
  public:
    broker() {
        for (int i = 1; i <= 120; i++) {
            queue_.push_back(payment(i));
            if (i % 7 == 0) queue_.push_back(payment(i));
            if (i == 3)
                queue_.push_back({"pay-malformed", R"({"account": "acct-0", "amount": "twelve"})"});
        }
    }

    std::vector<message> receive() {
        std::vector<message> batch;
        batch.swap(redelivered_);
        for (int i = 0; i < 10 && !queue_.empty(); i++) {
            batch.push_back(queue_.front());
            queue_.pop_front();
        }
        delivered_ += static_cast<int>(batch.size());
        return batch;
    }

    void ack(const message& m) {
        if (++acks_ % 10 == 0) redelivered_.push_back(m);
    }
    void nack(const message& m) { queue_.push_back(m); }
    void dead_letter(const message&) {}
    int delivered() const { return delivered_; }

  private:
    std::deque<message> queue_;
    std::vector<message> redelivered_;
    int acks_ = 0;
    int delivered_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------- the consumer

int main() {
    try {
        pqxx::connection conn("");
        broker broker;
        std::map<std::string, int> totals = {
            {"processed", 0}, {"duplicate", 0}, {"failed", 0}, {"poisoned", 0}};
        int retries = 0;
        for (auto batch = broker.receive(); !batch.empty(); batch = broker.receive()) {
            std::vector<std::string> outcomes = apply_with_retries(conn, batch, retries);
            for (size_t i = 0; i < batch.size(); i++) {
                const std::string& outcome = outcomes.at(i);
                totals[outcome]++;
                if (outcome == "processed" || outcome == "duplicate")
                    broker.ack(batch[i]);
                else if (outcome == "failed")
                    broker.nack(batch[i]);
                else if (outcome == "poisoned")
                    broker.dead_letter(batch[i]);
                else
                    throw std::runtime_error(batch[i].id + ": unexpected outcome " + outcome);
            }
        }
        std::printf("delivered=%d processed=%d duplicate=%d failed=%d poisoned=%d retries=%d\n",
                    broker.delivered(), totals["processed"], totals["duplicate"], totals["failed"],
                    totals["poisoned"], retries);
        std::printf("balances: %s\n", balances(conn).c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
