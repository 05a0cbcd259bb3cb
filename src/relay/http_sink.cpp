#include "relay/http_sink.hpp"

#include <memory>
#include <stdexcept>

namespace inbox_relay {
namespace {

constexpr long request_timeout_ms = 30000;
constexpr long connect_timeout_ms = 5000;
constexpr size_t error_body_kept = 200;

using HeaderListPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

// A header name keeps the token characters of HTTP (RFC 9110) and turns any other into '-'.
std::string header_name_of(const std::string& name) {
    std::string token = name;
    for (char& c : token) {
        bool letter_or_digit =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!letter_or_digit &&
            std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos) {
            c = '-';
        }
    }
    return token;
}

// A header value cannot hold a line break.
std::string header_value_of(const std::string& value) {
    std::string line = value;
    for (char& c : line) {
        if (c == '\r' || c == '\n') {
            c = ' ';
        }
    }
    return line;
}

// Keeps the start of the answer's body, to say why a request was refused.
extern "C" size_t keep_body_start(char* data, size_t size, size_t count, void* kept) {
    auto* body = static_cast<std::string*>(kept);
    if (body->size() < error_body_kept) {
        body->append(data, std::min(size * count, error_body_kept - body->size()));
    }
    return size * count;
}

}  // namespace

HttpSink::HttpSink(const std::string& url) : base_url_(url) {
    if (!url.starts_with("http://") && !url.starts_with("https://")) {
        throw std::invalid_argument("--http: '" + url + "' is not an http:// or https:// URL");
    }
    while (base_url_.ends_with('/')) {
        base_url_.pop_back();
    }
    curl_ = curl_easy_init();
    if (curl_ == nullptr) {
        throw std::runtime_error("libcurl could not be initialised");
    }
}

HttpSink::~HttpSink() {
    curl_easy_cleanup(curl_);
}

void HttpSink::connect() {
    // A handle of its own: a connect-only connection is not one that requests reuse.
    CURL* probe = curl_easy_init();
    if (probe == nullptr) {
        throw SinkError("libcurl could not be initialised");
    }
    curl_easy_setopt(probe, CURLOPT_URL, base_url_.c_str());
    curl_easy_setopt(probe, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(probe, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(probe, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
    CURLcode result = curl_easy_perform(probe);
    curl_easy_cleanup(probe);
    if (result != CURLE_OK) {
        throw SinkError(std::string("cannot connect: ") + curl_easy_strerror(result));
    }
    reachable_ = true;
}

void HttpSink::send(std::vector<OutboxMessage> batch) {
    SentBatch& sent = start_batch(std::move(batch));
    std::string unanswered = "not connected";
    for (size_t i = 0; i < sent.messages.size() && reachable_; ++i) {
        sent.outcomes[i] = post(sent.messages[i]);
        if (!reachable_) {
            unanswered = sent.outcomes[i].error;
        }
    }
    // The endpoint did not answer: the rest of the batch is retried after the backoff.
    for (PublishOutcome& outcome : sent.outcomes) {
        if (outcome.delivery == Delivery::unsent) {
            outcome.error = unanswered;
        }
    }
}

PublishOutcome HttpSink::post(const OutboxMessage& message) {
    char* escaped = curl_easy_escape(curl_, message.destination.data(),
                                     static_cast<int>(message.destination.size()));
    std::string url = base_url_ + "/" + (escaped != nullptr ? escaped : "");
    curl_free(escaped);

    HeaderListPtr headers(nullptr, &curl_slist_free_all);
    auto add_header = [&headers](const std::string& line) {
        headers.reset(curl_slist_append(headers.release(), line.c_str()));
    };
    add_header(std::string("Content-Type: ") + message.content_type());
    add_header("Idempotency-Key: " + message.id);
    add_header("Inbox-Message-Id: " + message.id);
    add_header("Expect:");  // no "100 Continue" round trip before larger bodies
    for (const auto& [name, value] : message.headers) {
        add_header("Inbox-Header-" + header_name_of(name) + ": " + header_value_of(value));
    }

    std::string body_start;
    curl_easy_reset(curl_);
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_POST, 1L);
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, message.payload.data());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(message.payload.size()));
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, request_timeout_ms);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, keep_body_start);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &body_start);
    CURLcode result = curl_easy_perform(curl_);
    if (result != CURLE_OK) {
        reachable_ = false;
        return {Delivery::unsent, std::string("POST ") + url + ": " + curl_easy_strerror(result)};
    }
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
        return {Delivery::confirmed, ""};
    }
    return {Delivery::refused, "POST " + url + ": HTTP " + std::to_string(status) +
                                   (body_start.empty() ? "" : ": " + body_start)};
}

}  // namespace inbox_relay
