// POSTs each message to an HTTP endpoint (libcurl): URL + "/" + the destination, the body the
// payload, the id in Idempotency-Key and Inbox-Message-Id, the headers as Inbox-Header-<name>.
// A 2xx answer confirms; any other status, or a transport error, refuses.
#pragma once

#include <curl/curl.h>

#include <string>
#include <vector>

#include "relay/sink.hpp"

namespace inbox_relay {

class HttpSink : public Sink {
  public:
    // Throws std::invalid_argument unless the URL is http:// or https://.
    explicit HttpSink(const std::string& url);
    ~HttpSink() override;
    HttpSink(const HttpSink&) = delete;
    HttpSink& operator=(const HttpSink&) = delete;

    // HTTP has no connection to hold: "connected" until a transport error, so that the relay
    // backs off before it takes the next batch for an endpoint that does not answer.
    bool connected() const override { return reachable_; }
    // Opens a connection to the endpoint's host (and its TLS), and no more: an endpoint that
    // cannot be reached throws SinkError, so that no batch is taken for it (each take counts an
    // attempt) until it can, as for a broker that is down.
    void connect() override;
    std::string describe() const override { return base_url_ + "/<destination>"; }
    // POSTs one message at a time: the outcomes are known when it returns.
    void send(std::vector<OutboxMessage> batch) override;
    SentBatch await_oldest() override { return take_oldest(); }

  private:
    PublishOutcome post(const OutboxMessage& message);

    std::string base_url_;  // without a trailing slash
    CURL* curl_ = nullptr;  // one handle: its connections are kept alive between requests
    bool reachable_ = false;
};

}  // namespace inbox_relay
