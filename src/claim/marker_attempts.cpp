// See marker_attempts.hpp.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
}

#include "claim/marker_attempts.hpp"
#include "claim/pending_claims.hpp"
#include "pg/compat.hpp"
#include "store/marker_table.hpp"

AttemptKey attempt_key(const Consumer& consumer, const MessageKey& key) {
    return make_attempt_key(MyDatabaseId, marker_store()->registry, VARDATA_ANY(consumer.name),
                            VARSIZE_ANY_EXHDR(consumer.name), key.data(), key.length());
}

int32 earlier_failures(const Consumer& consumer, const MessageKey& key) {
    // Without a failure kept anywhere, the key is not even made (the receive of every message).
    return attempts_any() ? attempts_failures(attempt_key(consumer, key)) : 0;
}

bool poisoned(int32 failures, int32 max_attempts) {
    return max_attempts > 0 && failures >= max_attempts;
}

bool insert_claimed_marker(const Consumer& consumer, MessageKey* key) {
    bool inserted = insert_marker(consumer, key);
    if (inserted) track_attempt(attempt_key(consumer, *key));
    return inserted;
}

void insert_claimed_markers(const Consumer& consumer, MessageKey* const* keys, int count,
                            bool* inserted) {
    insert_markers(consumer, keys, count, inserted);
    for (int i = 0; i < count; i++)
        if (inserted[i]) track_attempt(attempt_key(consumer, *keys[i]));
}

Forgotten forget_claimed_marker(const Consumer& consumer, bool registered, MessageKey* key) {
    bool removed = registered && remove_marker(consumer, key);
    return Forgotten{.marker = removed, .failures = attempts_forget(attempt_key(consumer, *key))};
}
