// An idempotent consumer with inbox, in C++ (libpqxx 6.4; Debian: libpqxx-dev).
//
// Applies payment messages to account balances exactly once, however often the broker delivers
// them. The loop is broker-agnostic: receive_batch() stands in for your broker's client and ack()
// for its acknowledgement. Each batch is one transaction: claim every message with the inbox,
// apply the payments claimed now, commit, then ack the whole batch. The transaction is retried on
// serialization failures (40001) and deadlocks (40P01).
//
//     CREATE EXTENSION inbox;
//     CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL);
//
// Connects with the PG* environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, ...).
// Build: make (or g++ -std=c++17 -o consumer consumer.cpp -lpqxx -lpq)

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <pqxx/pqxx>

namespace {

const char* const consumer_name = "payments";
constexpr int max_attempts = 5;

struct message {
    std::string id;
    std::string account;
    int amount;
};

// ---------------------------------------------------------------------------- the inbox

// The one place that talks to the inbox. Returns the ids claimed now (first deliveries: do their
// work in this transaction); the others were already processed.
//
// Each id is claimed once, in sorted order (std::set), so that two instances claiming
// overlapping batches take their locks in the same order. With inbox 1.1 this becomes one call,
// `SELECT inbox.claim_batch($1, $2)` with the ids as a text[], which does the same; and a message
// whose inbox.receive() outcome is 'poisoned' goes to the dead-letter queue.
std::set<std::string> claim(pqxx::work& tx, const std::vector<message>& batch) {
    std::set<std::string> ids;
    for (const auto& m : batch) ids.insert(m.id);
    std::set<std::string> claimed;
    for (const auto& id : ids) {
        if (tx.exec_params1("SELECT inbox.claim($1, $2)", consumer_name, id)[0].as<bool>())
            claimed.insert(id);
    }
    return claimed;
}

// ---------------------------------------------------------------------------- the broker

message payment(int i) {
    char id[16];
    std::snprintf(id, sizeof id, "pay-%04d", i);
    return {id, "acct-" + std::to_string(i % 5), (i * 37) % 1000 + 1};
}

// Stands in for the broker, which delivers at least once: payments 1 to 120 in batches of 10;
// every 7th payment is delivered twice in its batch, and each batch starts with the first message
// of the previous one again (its ack was lost).
std::vector<std::vector<message>> receive_batches() {
    std::vector<std::vector<message>> batches;
    std::vector<message> redelivery;
    for (int start = 1; start <= 120; start += 10) {
        std::vector<message> batch = redelivery;
        for (int i = start; i < start + 10; i++) batch.push_back(payment(i));
        for (int i = start; i < start + 10; i++)
            if (i % 7 == 0) batch.push_back(payment(i));
        redelivery = {payment(start)};
        batches.push_back(batch);
    }
    return batches;
}

// Stands in for the broker's acknowledgement, sent only after the commit.
void ack(const std::vector<message>&) {}

// ---------------------------------------------------------------------------- the consumer

struct counts {
    int processed = 0;
    int skipped = 0;
};

// One transaction.
counts apply_batch(pqxx::connection& conn, const std::vector<message>& batch) {
    counts c;
    pqxx::work tx(conn);
    std::set<std::string> todo = claim(tx, batch);
    for (const auto& m : batch) {
        if (todo.erase(m.id) == 0) {
            c.skipped++;  // a duplicate: already processed, here or earlier in this batch
            continue;
        }
        tx.exec_params0(
            "INSERT INTO accounts (id, balance) VALUES ($1, $2) "
            "ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance",
            m.account, m.amount);
        c.processed++;
    }
    tx.commit();
    return c;
}

}  // namespace

int main() {
    try {
        pqxx::connection conn("");
        int processed = 0, skipped = 0, retries = 0;
        for (const auto& batch : receive_batches()) {
            for (int attempt = 1;; attempt++) {
                try {
                    counts c = apply_batch(conn, batch);
                    processed += c.processed;
                    skipped += c.skipped;
                    break;
                } catch (const pqxx::serialization_failure&) {
                    if (attempt == max_attempts) throw;
                } catch (const pqxx::deadlock_detected&) {
                    if (attempt == max_attempts) throw;
                }
                retries++;
            }
            ack(batch);
        }
        std::printf("processed=%d skipped=%d retries=%d\n", processed, skipped, retries);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
