// See position_run.hpp.
#include "stream/position_run.hpp"

#include <limits>

namespace inbox {

PositionRun classify_positions(StreamPosition stream, const std::int64_t* ascending,
                               std::size_t count, bool contiguous) {
    // Positions are never negative: a stream not known yet takes any first one, unless it is
    // contiguous, which starts at first_contiguous_position.
    std::int64_t committed =
        stream.known ? stream.position : (contiguous ? first_contiguous_position - 1 : -1);
    PositionRun run = {0, 0};
    while (run.first_next < count && ascending[run.first_next] <= committed) run.first_next++;
    run.end_next = run.first_next;
    if (!contiguous) {
        run.end_next = count;
        return run;
    }
    if (run.end_next == count) return run;
    // ascending[end_next] > committed: committed + 1 does not overflow.
    std::int64_t expected = committed + 1;
    while (run.end_next < count && ascending[run.end_next] == expected) {
        run.end_next++;
        if (expected == std::numeric_limits<std::int64_t>::max()) break;
        expected++;
    }
    return run;
}

}  // namespace inbox
