// The consumer registry of the compact layout (inbox.consumer_registry): each consumer's name
// and the small integer id that its markers carry. A consumer registers on its first claim, in
// the claim's own transaction (consumer_registration.hpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

// What the markers and the attempts need of a registered consumer.
struct Consumer {
    int16 id;
    int32 max_attempts;  // 0: no limit
    text* name;          // as the caller gave it: what its failed attempts are known by
};

// The consumer named `consumer` (a validated key) through the backend's cache, in the caller's
// SPI connection. When it is not registered: registers it in the current transaction when
// `register_new`, else returns false.
bool find_consumer(text* consumer, bool register_new, Consumer* found);
