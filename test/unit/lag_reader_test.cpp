// inbox-relay reads its lag at most once a second, and spends at most 1% of the time on it: the
// policy (lag_read_interval), and LagReader, which the relay asks after each batch, following
// it on a clock of the test's. A role that may not read the lag is not asked again; a read that
// failed otherwise (a statement timeout) is retried at the next interval.
#include "relay/lag_reader.hpp"

#include <gtest/gtest.h>

#include <chrono>

using inbox_relay::lag_read_interval;
using inbox_relay::LagReader;
using inbox_relay::LagReading;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LagReadIntervalTest, OnceASecondWhileReadsAreShort) {
    EXPECT_EQ(lag_read_interval(milliseconds(0)), seconds(1));
    EXPECT_EQ(lag_read_interval(milliseconds(10)), seconds(1));
}

TEST(LagReadIntervalTest, AHundredTimesTheLastReadWhenItWasLong) {
    EXPECT_EQ(lag_read_interval(milliseconds(11)), milliseconds(1100));
    EXPECT_EQ(lag_read_interval(milliseconds(90)), seconds(9));
}

namespace {

// A clock that moves only when the test moves it, and a read of the lag that takes a given time
// on it and counts how often it was made.
struct LagReaderFixture : testing::Test {
    LagReader::Clock::time_point now{};
    LagReader::Clock::duration read_takes{};
    int reads = 0;
    long long pending = 0;
    LagReader reader{[this] { return now; }};

    std::string describe() {
        return reader.describe([this] {
            ++reads;
            now += read_takes;
            return LagReading{.outcome = LagReading::Outcome::read,
                              .lag = {.pending = pending, .oldest_pending_seconds = 1.25},
                              .error = {}};
        });
    }
};

}  // namespace

TEST_F(LagReaderFixture, ReadsAtMostOnceASecondAndShowsTheLastRead) {
    pending = 40;
    EXPECT_EQ(describe(), "lag: 40 pending, oldest 1.2 s");
    pending = 7;
    now += milliseconds(999);
    EXPECT_EQ(describe(), "lag: 40 pending, oldest 1.2 s");
    EXPECT_EQ(reads, 1);
    now += milliseconds(1);
    EXPECT_EQ(describe(), "lag: 7 pending, oldest 1.2 s");
    EXPECT_EQ(reads, 2);
}

TEST_F(LagReaderFixture, ALongReadWaitsAHundredTimesItsLength) {
    read_takes = milliseconds(90);
    describe();
    now += milliseconds(8900);  // 8.99 s after the read began
    describe();
    EXPECT_EQ(reads, 1);
    now += milliseconds(10);
    describe();
    EXPECT_EQ(reads, 2);
}

TEST(LagReaderTest, ARoleThatMayNotReadTheLagIsToldOnceAndNotAskedAgain) {
    LagReader::Clock::time_point now{};
    LagReader reader{[&now] { return now; }};
    int reads = 0;
    auto refused = [&reads] {
        ++reads;
        return LagReading{.outcome = LagReading::Outcome::forbidden,
                          .lag = {},
                          .error = "permission denied for view outbox_stats"};
    };
    EXPECT_EQ(reader.describe(refused),
              "lag unknown (the role may not read inbox.outbox_stats: grant it 'monitor')");
    now += seconds(60);
    reader.describe(refused);
    EXPECT_EQ(reads, 1);
}

TEST(LagReaderTest, AReadThatFailedOtherwiseIsRetriedAtTheNextInterval) {
    LagReader::Clock::time_point now{};
    LagReader reader{[&now] { return now; }};
    int reads = 0;
    auto timed_out_once = [&reads] {
        return ++reads == 1 ? LagReading{.outcome = LagReading::Outcome::failed,
                                         .lag = {},
                                         .error = "canceling statement due to statement timeout"}
                            : LagReading{.outcome = LagReading::Outcome::read,
                                         .lag = {.pending = 3, .oldest_pending_seconds = 0.5},
                                         .error = {}};
    };
    EXPECT_EQ(reader.describe(timed_out_once),
              "lag unknown (canceling statement due to statement timeout)");
    now += milliseconds(500);
    reader.describe(timed_out_once);
    EXPECT_EQ(reads, 1);
    now += milliseconds(500);
    EXPECT_EQ(reader.describe(timed_out_once), "lag: 3 pending, oldest 0.5 s");
    EXPECT_EQ(reads, 2);
}
