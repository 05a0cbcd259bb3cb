// The consumer registry of the compact layout (inbox.consumer_registry): each consumer's name
// and the small integer id that its markers carry. A consumer registers on its first claim, in
// the claim's own transaction (consumer_registration.hpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "store/consumer.hpp"

// The consumer named `consumer` (a validated name) through the backend's cache, in the caller's
// SPI connection. When it is not registered: registers it in the current transaction when
// `register_new`, else returns false.
bool find_consumer(text* consumer, bool register_new, Consumer* found);

// Sets the consumer's own retention and max_attempts (NULL: the defaults), registering it when
// it is new; every backend then reads the registry again. An error (55000) in a database whose
// markers are still in the layout of 1.0.
void configure_consumer(text* consumer, NullableDatum retention, NullableDatum max_attempts);
