#include "relay/outbox_database.hpp"

#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "relay/header_list.hpp"
#include "relay/output.hpp"
#include "relay/stop_signal.hpp"
#include "relay/uuid_array.hpp"

namespace inbox_relay {
namespace {

using ResultPtr = std::unique_ptr<PGresult, decltype(&PQclear)>;

// libpq's messages span lines (a detail, a hint): one line each in the relay's output.
std::string one_line(const std::string& text) {
    std::string line;
    for (char c : text) {
        if (c == '\n' || c == '\t') {
            if (!line.empty() && line.back() != ' ') {
                line += ' ';
            }
        } else {
            line += c;
        }
    }
    while (!line.empty() && line.back() == ' ') {
        line.pop_back();
    }
    return line;
}

// Notices (a warning that the server shuts down) go to the relay's output, as one line.
extern "C" void print_notice(void*, const char* message) {
    print_line("database: " + one_line(message));
}

// The statements a batch runs, prepared once a connection: parsed and planned at the connection's
// first batch, not at every one.
constexpr const char* take_name = "inbox_relay_take";
constexpr const char* done_name = "inbox_relay_done";
constexpr const char* failed_name = "inbox_relay_failed";

// The headers object comes as a list of netstrings (name, value, name, value ...): exact for any
// text, and read without a JSON parser; jsonb_each_text gives string values unquoted and the
// others as their JSON text. Messages without headers skip the subquery. WITH ORDINALITY keeps
// relay_take's order (send order).
constexpr const char* take_statement =
    "SELECT t.id, t.destination, t.key, t.payload::text, t.payload_bytes, t.attempt, "
    "  CASE WHEN t.headers IS NOT NULL THEN "
    "   (SELECT string_agg(octet_length(h.key) || ':' || h.key || ',' || "
    "                      octet_length(coalesce(h.value, 'null')) || ':' || "
    "                      coalesce(h.value, 'null') || ',', '' ORDER BY h.key) "
    "    FROM jsonb_each_text(t.headers) h) END "
    "FROM inbox.relay_take($1, $2::integer, $3::float8 * interval '1 second', $4::text[]) "
    "     WITH ORDINALITY t "
    "ORDER BY t.ordinality";
constexpr const char* done_statement = "SELECT inbox.relay_done($1::uuid[])";
// With the relay's name: a relay whose lease expired while its sink stalled leaves alone the
// messages another relay took since.
constexpr const char* failed_statement =
    "SELECT inbox.relay_failed($1::uuid[], $2, $3::float8 * interval '1 second', $4)";

// An array literal of the given texts, each quoted (a destination may hold any character).
std::string array_literal(const std::vector<std::string>& items) {
    std::string array = "{";
    for (const std::string& item : items) {
        array += array.size() > 1 ? ",\"" : "\"";
        for (char c : item) {
            if (c == '"' || c == '\\') {
                array += '\\';
            }
            array += c;
        }
        array += '"';
    }
    return array + "}";
}

std::string bytes_of(const char* escaped) {
    size_t length = 0;
    unsigned char* bytes =
        PQunescapeBytea(reinterpret_cast<const unsigned char*>(escaped), &length);
    if (bytes == nullptr) {
        throw DatabaseError("out of memory reading a payload of bytes");
    }
    std::string result(reinterpret_cast<const char*>(bytes), length);
    PQfreemem(bytes);
    return result;
}

}  // namespace

OutboxDatabase::OutboxDatabase(std::string conninfo, std::string relay_name)
    : conninfo_(std::move(conninfo)), relay_name_(std::move(relay_name)) {
    // A connection string libpq cannot parse never connects: a bad option (exit status 2), not
    // a database to wait for. One that is neither key=value pairs nor a URI is a database name,
    // as libpq takes it (expand_dbname).
    std::string_view text = conninfo_;
    if (text.find('=') != text.npos || text.starts_with("postgresql://") ||
        text.starts_with("postgres://")) {
        char* error = nullptr;
        PQconninfoOption* parsed = PQconninfoParse(conninfo_.c_str(), &error);
        if (parsed == nullptr) {
            std::string why = error != nullptr ? one_line(error) : "out of memory";
            PQfreemem(error);
            throw std::invalid_argument("--db: " + why);
        }
        PQconninfoFree(parsed);
    }
}

OutboxDatabase::~OutboxDatabase() {
    disconnect();
}

void OutboxDatabase::connect() {
    disconnect();
    std::string application_name = "inbox-relay " + relay_name_;
    const char* keywords[] = {"dbname", "fallback_application_name", nullptr};
    const char* values[] = {conninfo_.c_str(), application_name.c_str(), nullptr};
    connection_ = PQconnectdbParams(keywords, values, 1);
    if (connection_ == nullptr || PQstatus(connection_) != CONNECTION_OK) {
        std::string error = connection_ != nullptr ? PQerrorMessage(connection_) : "out of memory";
        disconnect();
        throw DatabaseError(one_line(error));
    }
    PQsetNoticeProcessor(connection_, print_notice, nullptr);
    // relay_take wants READ COMMITTED, whatever the role's or database's default says.
    PQclear(execute("SET default_transaction_isolation = 'read committed'", {}));
    PQclear(execute("LISTEN inbox_outbox", {}));
    prepare(take_name, take_statement, 4);
    prepare(done_name, done_statement, 1);
    prepare(failed_name, failed_statement, 4);
}

void OutboxDatabase::prepare(const char* name, const char* statement, int parameter_count) {
    check(PQprepare(connection_, name, statement, parameter_count, nullptr));
}

void OutboxDatabase::disconnect() {
    if (connection_ != nullptr) {
        PQfinish(connection_);
        connection_ = nullptr;
    }
}

std::string OutboxDatabase::describe() const {
    if (connection_ == nullptr) {
        return "no database";
    }
    return std::string("database ") + PQdb(connection_) + " as " + PQuser(connection_) + " on " +
           PQhost(connection_) + ":" + PQport(connection_);
}

void OutboxDatabase::require_connection() const {
    if (connection_ == nullptr) {
        throw DatabaseError("not connected");
    }
}

PGresult* OutboxDatabase::execute(const char* statement,
                                  const std::vector<const char*>& parameters) {
    require_connection();
    return check(PQexecParams(connection_, statement, static_cast<int>(parameters.size()), nullptr,
                              parameters.data(), nullptr, nullptr, 0));
}

PGresult* OutboxDatabase::execute_prepared(const char* name,
                                           const std::vector<const char*>& parameters) {
    require_connection();
    return check(PQexecPrepared(connection_, name, static_cast<int>(parameters.size()),
                                parameters.data(), nullptr, nullptr, 0));
}

PGresult* OutboxDatabase::execute_settling(const char* name, const std::vector<std::string>& ids,
                                           const std::vector<const char*>& more_parameters) {
    require_connection();
    std::string id_array;
    try {
        id_array = binary_uuid_array(ids);
    } catch (const std::invalid_argument& error) {
        throw DatabaseError(std::string("relay_take returned an id that is not a UUID: ") +
                            error.what());
    }
    std::vector<const char*> values = {id_array.data()};
    values.insert(values.end(), more_parameters.begin(), more_parameters.end());
    std::vector<int> lengths(values.size(), 0);
    std::vector<int> formats(values.size(), 0);
    lengths[0] = static_cast<int>(id_array.size());
    formats[0] = 1;
    return check(PQexecPrepared(connection_, name, static_cast<int>(values.size()), values.data(),
                                lengths.data(), formats.data(), 0));
}

PGresult* OutboxDatabase::check(PGresult* result) {
    ExecStatusType status = PQresultStatus(result);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
        std::string error = PQresultErrorMessage(result);
        if (error.empty()) {
            error = PQerrorMessage(connection_);
        }
        PQclear(result);
        throw DatabaseError(one_line(error));
    }
    return result;
}

std::vector<OutboxMessage> OutboxDatabase::take(int max_messages, double lease_seconds,
                                                const std::vector<std::string>& destinations) {
    // NULL (every destination) is the one parameter that may be absent.
    std::string destination_array = array_literal(destinations);
    std::vector<const char*> parameters = {
        relay_name_.c_str(), nullptr, nullptr,
        destinations.empty() ? nullptr : destination_array.c_str()};
    std::string batch_size = std::to_string(max_messages);
    std::string lease = std::to_string(lease_seconds);
    parameters[1] = batch_size.c_str();
    parameters[2] = lease.c_str();
    ResultPtr result(execute_prepared(take_name, parameters), &PQclear);
    std::vector<OutboxMessage> batch;
    batch.reserve(PQntuples(result.get()));
    for (int row = 0; row < PQntuples(result.get()); ++row) {
        auto text = [&](int column) { return PQgetvalue(result.get(), row, column); };
        auto is_null = [&](int column) { return PQgetisnull(result.get(), row, column) != 0; };
        OutboxMessage message;
        message.id = text(0);
        message.destination = text(1);
        if (!is_null(2)) {
            message.key = text(2);
        }
        message.payload_is_bytes = is_null(3);
        message.payload = message.payload_is_bytes ? bytes_of(text(4)) : std::string(text(3));
        message.attempt = std::stoi(text(5));
        if (!is_null(6)) {
            try {
                message.headers = parse_header_list(text(6));
            } catch (const std::invalid_argument& error) {
                throw DatabaseError(std::string("headers of ") + message.id + ": " + error.what());
            }
        }
        batch.push_back(std::move(message));
    }
    return batch;
}

void OutboxDatabase::mark_done(const std::vector<std::string>& ids) {
    PQclear(execute_settling(done_name, ids, {}));
}

void OutboxDatabase::mark_failed(const std::vector<std::string>& ids, const std::string& error,
                                 double retry_after_seconds) {
    std::string retry_after = std::to_string(retry_after_seconds);
    PQclear(execute_settling(failed_name, ids,
                             {error.c_str(), retry_after.c_str(), relay_name_.c_str()}));
}

LagReading OutboxDatabase::read_lag() {
    ResultPtr result(PQexec(connection_,
                            "SELECT pending, coalesce(extract(epoch FROM oldest_pending_age), 0) "
                            "FROM inbox.outbox_stats"),
                     &PQclear);
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
        if (PQstatus(connection_) != CONNECTION_OK) {
            throw DatabaseError(one_line(PQerrorMessage(connection_)));
        }
        const char* sqlstate = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
        bool forbidden = sqlstate != nullptr && std::string_view(sqlstate) == "42501";
        return {.outcome = forbidden ? LagReading::Outcome::forbidden : LagReading::Outcome::failed,
                .lag = {},
                .error = one_line(PQresultErrorMessage(result.get()))};
    }
    return {.outcome = LagReading::Outcome::read,
            .lag = {.pending = std::stoll(PQgetvalue(result.get(), 0, 0)),
                    .oldest_pending_seconds = std::stod(PQgetvalue(result.get(), 0, 1))},
            .error = {}};
}

bool OutboxDatabase::drain_notifications() {
    if (PQconsumeInput(connection_) == 0) {
        throw DatabaseError(one_line(PQerrorMessage(connection_)));
    }
    bool any = false;
    while (PGnotify* notification = PQnotifies(connection_)) {
        PQfreemem(notification);
        any = true;
    }
    return any;
}

void OutboxDatabase::wait_for_notification(double timeout_seconds) {
    // A notification that came in with an earlier statement's answer is already read.
    if (drain_notifications()) {
        return;
    }
    wait_readable_or_stop(PQsocket(connection_), timeout_seconds);
    drain_notifications();
}

}  // namespace inbox_relay
