// The consumer registry of the compact layout (inbox.consumer_registry): each consumer's name
// and the small integer id that its markers carry. A consumer registers on its first claim, in
// the claim's own transaction (consumer_registration.hpp).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "store/consumer.hpp"

// What a lookup does with a consumer that is not registered.
enum class Registration {
    none,      // nothing: find_consumer answers false
    by_claim,  // registers it as inbox.consumer_registration says: under 'configured', an error
               // (42704) naming inbox.configure_consumer
    always,    // registers it: inbox.configure_consumer, the owner's writes through inbox.messages
};

// The consumer named `consumer` (a validated name) through the backend's cache, in the caller's
// SPI connection; false when it is not registered and `registration` did not register it (in
// the current transaction). The cache follows every committed change of the registry from the
// next lookup on.
bool find_consumer(text* consumer, Registration registration, Consumer* found);

// find_consumer for a call that acts for the consumer (a claim, a receive, a batch, complete,
// forget): an error (42501) when the current user may not (consumer_access.hpp), before anything
// is written or counted.
bool find_consumer_to_act(text* consumer, Registration registration, Consumer* found);

// One setting of configure_consumer: whether the call changes it, and to what (NULL: the
// default; for the owner, none).
struct ConsumerSetting {
    bool named;
    NullableDatum value;
};

// What a call of configure_consumer (or reset_consumer) changes; a setting not named keeps its
// value. 1.1's function names no owner (its registry has none), 1.2's names every setting, 1.3's
// those it is given, reset_consumer those it resets.
struct ConsumerSettings {
    ConsumerSetting retention;
    ConsumerSetting max_attempts;
    ConsumerSetting owner;
};

// Changes the settings named, registering the consumer when it is new; every backend then reads
// the registry again. An error (42501) when the current user may not act for the consumer as it
// is owned now, or may not give it to the new owner; an error (55000) in a database whose markers
// are still in the layout of 1.0.
void configure_consumer(text* consumer, const ConsumerSettings& settings);
