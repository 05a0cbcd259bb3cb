// The consumer registry of the compact layout (inbox.consumer_registry): each consumer's name
// and the small integer id that its markers carry. A consumer registers on its first claim, in
// the claim's own transaction: no second round trip, and claims of different consumers never
// wait for each other (only two first claims of one new consumer meet, on its unique name).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

// What the markers and the attempts need of a registered consumer.
struct Consumer {
    int16 id;
    int32 max_attempts;  // 0: no limit
};

// The consumer named `consumer` (a validated key) through the backend's cache, in the caller's
// SPI connection. When it is not registered: registers it when `register_new` (in a transaction
// of its own where possible, consumer_registrar.hpp), else returns false.
bool find_consumer(text* consumer, bool register_new, Consumer* found);

// Registers `consumer` (any name) in the current transaction when it is new; as the registry
// has it.
Consumer register_consumer_now(text* consumer);
