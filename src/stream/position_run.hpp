// What a claim of stream positions answers, from the stream's committed position: pure logic,
// outside PostgreSQL (claim_position.cpp applies it to the locked row of the stream).
#pragma once

#include <cstddef>
#include <cstdint>

namespace inbox {

// The first position of a contiguous stream (an aggregate's events: 1, 2, 3, ...). A stream that
// is not contiguous (a partition's offsets) starts wherever its first claim is.
constexpr std::int64_t first_contiguous_position = 1;

// A stream's committed position as a claim reads it; not known before its first claim commits.
struct StreamPosition {
    bool known;
    std::int64_t position;
};

// The answers to positions claimed together, ascending and distinct: [0, first_next) are
// duplicates (at or below the stream's position), [first_next, end_next) are next (the stream
// moves to the last of them), [end_next, count) follow a gap (only when contiguous: a position
// before them is missing).
struct PositionRun {
    std::size_t first_next;
    std::size_t end_next;
};

PositionRun classify_positions(StreamPosition stream, const std::int64_t* ascending,
                               std::size_t count, bool contiguous);

}  // namespace inbox
