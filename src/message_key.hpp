// The identity of a marker: (consumer, message_id), and the rules every caller's key must meet.
#pragma once

#include <cstddef>

namespace inbox {

// Byte limits of the contract: they keep a marker, and so the primary-key index, small.
constexpr std::size_t max_consumer_bytes = 64;
constexpr std::size_t max_message_id_bytes = 128;

enum class KeyProblem { none, empty, too_long };

constexpr KeyProblem check_key_length(std::size_t length, std::size_t max_bytes) {
    if (length == 0) return KeyProblem::empty;
    if (length > max_bytes) return KeyProblem::too_long;
    return KeyProblem::none;
}

}  // namespace inbox
