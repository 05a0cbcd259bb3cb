// Whose rows inbox.stats and inbox.attempts show (and the functions behind them): a consumer with
// an owner is seen by the roles that may act for it (store/consumer_access.hpp) and by the
// monitoring roles, those with the privileges of pg_read_all_stats (pg_monitor has them), as
// pg_stat_activity shows other roles' queries; a consumer without one by every reader.
#pragma once

extern "C" {
#include "postgres.h"
}

struct ConsumerVisibility {
    bool every_consumer;  // a monitoring role, or a registry without owners (1.1)
};

// What the current user sees, decided once per call of a function that lists consumers.
ConsumerVisibility consumer_visibility();

// Whether the consumer's rows are shown, in the caller's SPI connection.
bool consumer_visible(const ConsumerVisibility& visibility, text* consumer);
