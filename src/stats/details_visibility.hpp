// What a reader of inbox.attempts sees of a consumer's failed messages. Every reader of the views
// (monitor access) sees every consumer's numbers, owned or not: inbox.stats whole, and in
// inbox.attempts each failed message's count, SQLSTATE and time, so that alerting never depends
// on who owns a consumer. The message ids and error texts of a consumer with an owner are its
// service's data (an id names an order, an error text may quote a customer's): they are shown to
// the roles that may act for it (store/consumer_access.hpp) and to the monitoring roles, those
// with the privileges of pg_read_all_stats (pg_monitor has them), as pg_stat_activity shows other
// roles' queries; NULL to other readers.
#pragma once

extern "C" {
#include "postgres.h"
}

struct DetailsVisibility {
    bool every_consumer;  // a monitoring role, or a registry without owners (1.1)
};

// What the current user sees, decided once per call of a function that lists failed messages.
DetailsVisibility details_visibility();

// Whether the message ids and error texts of the consumer are shown, in the caller's SPI
// connection.
bool details_visible(const DetailsVisibility& visibility, text* consumer);
