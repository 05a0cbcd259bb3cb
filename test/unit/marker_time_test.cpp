#include "store/marker_time.hpp"

#include <gtest/gtest.h>

using inbox::expired;
using inbox::first_kept;
using inbox::marker_seconds;
using inbox::marker_time;

namespace {
constexpr std::int64_t second = inbox::microseconds_per_second;
}

TEST(MarkerTime, KeepsWholeSecondsExactly) {
    for (std::int64_t seconds :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{255}, std::int64_t{256},
          std::int64_t{849000123}, std::int64_t{-1}, std::int64_t{-257}})
        EXPECT_EQ(marker_seconds(marker_time(seconds * second)), seconds) << seconds;
}

TEST(MarkerTime, RoundsDownToTheSecond) {
    EXPECT_EQ(marker_seconds(marker_time(10 * second + 999999)), 10);
    EXPECT_EQ(marker_seconds(marker_time(-1)), -1);  // before the epoch, down as well
}

TEST(MarkerTime, BucketsAre256Seconds) {
    EXPECT_EQ(marker_time(255 * second).bucket, 0);
    EXPECT_EQ(marker_time(256 * second).bucket, 1);
    EXPECT_EQ(marker_time(256 * second).offset, 0);
    EXPECT_EQ(marker_time(511 * second).offset, 255);
}

// The purge boundary: a marker goes when its whole second lies before the cutoff, never before.
TEST(MarkerTime, ExpiresOnlyWhenItsWholeSecondIsBeforeTheCutoff) {
    std::int64_t cutoff = 1000 * second + 500000;  // 1000.5 s
    EXPECT_TRUE(expired(marker_time(999 * second), first_kept(cutoff)));
    EXPECT_FALSE(expired(marker_time(1000 * second), first_kept(cutoff)));  // may be 1000.7
    EXPECT_FALSE(expired(marker_time(1001 * second), first_kept(cutoff)));
    // A cutoff on a whole second: the second before it goes, the second itself stays.
    EXPECT_TRUE(expired(marker_time(999 * second + 999999), first_kept(1000 * second)));
    EXPECT_FALSE(expired(marker_time(1000 * second), first_kept(1000 * second)));
}

TEST(MarkerTime, ExpiryComparesAcrossBuckets) {
    std::int64_t cutoff = 512 * second;                                   // bucket 2, offset 0
    EXPECT_TRUE(expired(marker_time(511 * second), first_kept(cutoff)));  // bucket 1, offset 255
    EXPECT_FALSE(expired(marker_time(513 * second), first_kept(cutoff)));
}
