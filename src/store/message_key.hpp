// The identity of a marker: (consumer, message_id), the limits every consumer name and message id
// must meet, and the message key, the form a message id is stored in (the column message_key of
// the markers): a canonical UUID as its 16 bytes, any other id as its own bytes. Pure C++ (no
// PostgreSQL call), unit-tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace inbox {

// Byte limits of the contract: they keep a marker, and so the primary-key index, small.
constexpr std::size_t max_consumer_bytes = 64;
constexpr std::size_t max_message_id_bytes = 128;

enum class LengthProblem { none, empty, too_long };

constexpr LengthProblem check_identity_length(std::size_t length, std::size_t max_bytes) {
    if (length == 0) return LengthProblem::empty;
    if (length > max_bytes) return LengthProblem::too_long;
    return LengthProblem::none;
}

// The message key, a message id's stored form, lossless and unambiguous:
//  - a UUID in canonical text (36 characters, lowercase hex, hyphens at 8-4-4-4-12) is its 16
//    bytes;
//  - an id of exactly 16 bytes is those bytes and a 0 byte (text never holds a 0 byte, so it
//    cannot be mistaken for a UUID, nor for another id);
//  - any other id is its bytes as they are.
constexpr std::size_t uuid_bytes = 16;
constexpr std::size_t uuid_text_length = 36;
constexpr std::size_t max_message_key_bytes = max_message_id_bytes + 1;

// Writes the stored form of id[0 .. length) to out (room for max(length + 1, 16) bytes) and
// returns its length.
std::size_t encode_message_id(const char* id, std::size_t length, std::uint8_t* out);

// The length of the text form of a message key, and the text itself (out has room for it).
std::size_t decoded_message_id_length(const std::uint8_t* key, std::size_t length);
void decode_message_id(const std::uint8_t* key, std::size_t length, char* out);

}  // namespace inbox
