// When a marker was processed, as it is stored: whole seconds since 2000-01-01 00:00 UTC (the
// epoch of PostgreSQL's timestamps), split into a 256-second bucket (an int4 column, which the
// retention index keys on, so that B-tree deduplication keeps one posting list per consumer and
// bucket) and the second within the bucket (a one-byte "char" column, which fits in the
// alignment padding of the marker's tuple and so costs no byte). Pure C++, unit-tested.
#pragma once

#include <cstdint>

namespace inbox {

constexpr std::int64_t microseconds_per_second = 1000000;
constexpr int bucket_bits = 8;
constexpr std::int64_t bucket_seconds = std::int64_t{1} << bucket_bits;

struct MarkerTime {
    std::int32_t bucket;
    std::uint8_t offset;  // the second within the bucket, 0..255 (SQL's "char" compares unsigned)
};

// Whole seconds, rounded down (towards minus infinity), of a timestamp in microseconds.
constexpr std::int64_t whole_seconds(std::int64_t microseconds) {
    std::int64_t seconds = microseconds / microseconds_per_second;
    return microseconds % microseconds_per_second < 0 ? seconds - 1 : seconds;
}

constexpr MarkerTime marker_time(std::int64_t microseconds) {
    std::int64_t seconds = whole_seconds(microseconds);
    return MarkerTime{static_cast<std::int32_t>(seconds >> bucket_bits),
                      static_cast<std::uint8_t>(seconds & (bucket_seconds - 1))};
}

constexpr std::int64_t marker_seconds(MarkerTime time) {
    return (std::int64_t{time.bucket} << bucket_bits) + time.offset;
}

// A marker expires when its whole second lies before the cutoff: never earlier than its
// retention (the stored second may be up to a second before the real processing time), at most
// a second later. The purge deletes exactly the markers whose stored time is before
// first_kept(cutoff).
constexpr MarkerTime first_kept(std::int64_t cutoff_microseconds) {
    return marker_time(cutoff_microseconds);
}

constexpr bool expired(MarkerTime stored, MarkerTime first_kept_time) {
    return stored.bucket < first_kept_time.bucket ||
           (stored.bucket == first_kept_time.bucket && stored.offset < first_kept_time.offset);
}

}  // namespace inbox
