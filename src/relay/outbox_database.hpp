// The relay's side of the database: one libpq connection that listens on inbox_outbox, takes
// batches with inbox.relay_take and settles them with relay_done and relay_failed, each
// statement its own short READ COMMITTED transaction, prepared when the connection opens.
#pragma once

#include <libpq-fe.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "relay/outbox_lag.hpp"
#include "relay/outbox_message.hpp"

namespace inbox_relay {

// The connection failed or a statement did: the caller drops the connection and reconnects.
class DatabaseError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class OutboxDatabase {
  public:
    OutboxDatabase(std::string conninfo, std::string relay_name);
    ~OutboxDatabase();
    OutboxDatabase(const OutboxDatabase&) = delete;
    OutboxDatabase& operator=(const OutboxDatabase&) = delete;

    bool connected() const { return connection_ != nullptr; }
    // Connects and listens; throws DatabaseError.
    void connect();
    void disconnect();
    // "host=... dbname=... user=...", to say where the relay is connected.
    std::string describe() const;

    // destinations empty: every destination.
    std::vector<OutboxMessage> take(int max_messages, double lease_seconds,
                                    const std::vector<std::string>& destinations);
    void mark_done(const std::vector<std::string>& ids);
    void mark_failed(const std::vector<std::string>& ids, const std::string& error,
                     double retry_after_seconds);
    // The lag from inbox.outbox_stats; forbidden when the role may not read it (no 'monitor'
    // access), failed for another error of the statement.
    LagReading read_lag();

    // Waits until a notification arrives, the stop signal is raised, or the timeout passes.
    void wait_for_notification(double timeout_seconds);

  private:
    // Throws DatabaseError when the connection is down.
    void require_connection() const;
    void prepare(const char* name, const char* statement, int parameter_count);
    PGresult* execute(const char* statement, const std::vector<const char*>& parameters);
    PGresult* execute_prepared(const char* name, const std::vector<const char*>& parameters);
    // relay_done's or relay_failed's statement: $1 the ids (binary), then more_parameters (text).
    PGresult* execute_settling(const char* name, const std::vector<std::string>& ids,
                               const std::vector<const char*>& more_parameters);
    // The result when the statement succeeded; otherwise frees it and throws DatabaseError.
    PGresult* check(PGresult* result);
    // True when a notification came in since the last call (they are read and dropped).
    bool drain_notifications();

    std::string conninfo_;
    std::string relay_name_;
    PGconn* connection_ = nullptr;
};

}  // namespace inbox_relay
