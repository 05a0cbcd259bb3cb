#include "stream/position_run.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

using inbox::classify_positions;
using inbox::PositionRun;
using inbox::StreamPosition;

namespace {

constexpr StreamPosition unknown = {false, 0};

StreamPosition at(std::int64_t position) {
    return {true, position};
}

PositionRun classify(StreamPosition stream, const std::vector<std::int64_t>& ascending,
                     bool contiguous) {
    return classify_positions(stream, ascending.data(), ascending.size(), contiguous);
}

void expect_run(PositionRun run, std::size_t first_next, std::size_t end_next) {
    EXPECT_EQ(run.first_next, first_next);
    EXPECT_EQ(run.end_next, end_next);
}

}  // namespace

TEST(PositionRun, AnUnknownStreamTakesAnyFirstPosition) {
    expect_run(classify(unknown, {0}, false), 0, 1);
    expect_run(classify(unknown, {41, 57}, false), 0, 2);
}

TEST(PositionRun, AtOrBelowTheCommittedPositionIsADuplicate) {
    expect_run(classify(at(10), {9}, false), 1, 1);
    expect_run(classify(at(10), {10}, false), 1, 1);
    expect_run(classify(at(10), {11}, false), 0, 1);
    expect_run(classify(at(10), {8, 10, 11, 15}, false), 2, 4);
}

TEST(PositionRun, HolesDoNotMatterToAStreamThatIsNotContiguous) {
    expect_run(classify(at(10), {12, 20}, false), 0, 2);
}

TEST(PositionRun, AContiguousStreamStartsAtOne) {
    expect_run(classify(unknown, {1}, true), 0, 1);
    expect_run(classify(unknown, {2}, true), 0, 0);  // a gap: 1 is missing
    expect_run(classify(unknown, {0}, true), 1, 1);  // below the first position
    expect_run(classify(unknown, {1, 2, 3}, true), 0, 3);
}

TEST(PositionRun, AContiguousRunStopsAtTheFirstHole) {
    expect_run(classify(at(4), {5}, true), 0, 1);
    expect_run(classify(at(4), {6}, true), 0, 0);
    expect_run(classify(at(4), {3, 4, 5, 6, 8, 9}, true), 2, 4);
}

TEST(PositionRun, NothingClaimedAnswersNothing) {
    expect_run(classify(at(4), {}, true), 0, 0);
    expect_run(classify(unknown, {}, false), 0, 0);
}

TEST(PositionRun, TheLastPositionDoesNotOverflow) {
    constexpr std::int64_t last = std::numeric_limits<std::int64_t>::max();
    expect_run(classify(at(last), {last}, true), 1, 1);
    expect_run(classify(at(last - 1), {last}, true), 0, 1);
    expect_run(classify(at(last - 2), {last - 1, last}, true), 0, 2);
}
