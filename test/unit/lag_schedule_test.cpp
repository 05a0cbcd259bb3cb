// inbox-relay reads its lag at most once a second, and spends at most 1% of the time on it.
#include "relay/lag_schedule.hpp"

#include <gtest/gtest.h>

#include <chrono>

using inbox_relay::lag_read_interval;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LagScheduleTest, OnceASecondWhileReadsAreShort) {
    EXPECT_EQ(lag_read_interval(milliseconds(0)), seconds(1));
    EXPECT_EQ(lag_read_interval(milliseconds(10)), seconds(1));
}

TEST(LagScheduleTest, AHundredTimesTheLastReadWhenItWasLong) {
    EXPECT_EQ(lag_read_interval(milliseconds(11)), milliseconds(1100));
    EXPECT_EQ(lag_read_interval(milliseconds(90)), seconds(9));
}
