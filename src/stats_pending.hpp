// Counting claims for inbox.stats: `applied` (a claim that inserted its marker, counted when its
// transaction commits) and `duplicates` (a claim answered false, counted when answered).
#pragma once

extern "C" {
#include "postgres.h"
}

// Counts one claim of `consumer` whose answer was `inserted`, and returns that answer, so that
// the call wraps the claim. O(1) and allocation-free in the common case; never raises an error.
bool count_claim(text* consumer, bool inserted);
