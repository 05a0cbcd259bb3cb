// Operations on one marker of the compact store (inbox.markers, and inbox.marker_details for
// the markers that keep a payload's fingerprint or a result), shared by every function that
// claims. C-style: the hot path. Each runs in the caller's SPI connection, as the store's owner.
#pragma once

extern "C" {
#include "postgres.h"
}

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pg/compat.hpp"
#include "store/consumer.hpp"
#include "store/message_key.hpp"

// A message key (message_key.hpp): a message id in its stored form, the value of the column
// message_key, as a bytea on the stack. What "key" means in the store; the consumer name and the
// message id as callers give them are a marker's identity (marker_arguments.hpp).
struct MessageKey {
    alignas(int32) char bytes[VARHDRSZ + inbox::max_message_key_bytes];
    bytea* datum() { return reinterpret_cast<bytea*>(bytes); }
    const std::uint8_t* data() const {
        return reinterpret_cast<const std::uint8_t*>(bytes + VARHDRSZ);
    }
    std::size_t length() const { return VARSIZE(bytes) - VARHDRSZ; }
};

void store_message_id(text* message_id, MessageKey* key);

// Inserts the marker, stamped with the transaction's start time; true when it was new. Waits
// for an uncommitted copy.
bool insert_marker(const Consumer& consumer, MessageKey* key);

// Deletes the marker and its details; true when there was a marker.
bool remove_marker(const Consumer& consumer, MessageKey* key);

// What is kept with a marker that had a payload or a result: nothing (false), or its
// fingerprint (0 when none was kept) and its result (NULL when none).
struct MarkerDetails {
    bool has_fingerprint;
    int64 fingerprint;
    Datum result;  // jsonb, palloc'd in the caller's context; 0 when none
};
bool read_details(int16 consumer, MessageKey* key, MarkerDetails* details);

// Keeps the payload's fingerprint with a marker just inserted.
void keep_fingerprint(int16 consumer, MessageKey* key, int64 fingerprint);

// Keeps the result with the marker (which must exist); false when there is no marker.
bool keep_result(int16 consumer, MessageKey* key, Datum result);

// Deletes only the marker row: a batch takes back the marker of a message whose handler failed
// (its failed attempt is counted by the caller).
void withdraw_marker(int16 consumer, MessageKey* key);

// Inserts the markers of `keys` (already in their canonical order: the primary
// key's, so that two overlapping batches lock in the same order and never deadlock) in one
// statement; inserted[i] tells which were new.
void insert_markers(const Consumer& consumer, MessageKey* const* keys, int count, bool* inserted);

// The canonical order of message keys, the primary key's (bytea's: bytes, then the shorter
// first). Inline: a batch sorts its keys with it.
inline int compare_key_bytes(const void* a, std::size_t a_length, const void* b,
                             std::size_t b_length) {
    int order = memcmp(a, b, Min(a_length, b_length));
    if (order != 0) return order;
    return a_length < b_length ? -1 : a_length > b_length ? 1 : 0;
}
inline int compare_message_keys(const MessageKey& a, const MessageKey& b) {
    return compare_key_bytes(a.data(), a.length(), b.data(), b.length());
}
