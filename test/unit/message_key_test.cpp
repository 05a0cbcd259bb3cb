#include "message_key.hpp"

#include <gtest/gtest.h>

using inbox::check_key_length;
using inbox::KeyProblem;

TEST(MessageKey, EmptyKeyIsRejected) {
    EXPECT_EQ(check_key_length(0, inbox::max_consumer_bytes), KeyProblem::empty);
}

// The limits themselves (64 and 128 bytes) are checked where users meet them, in the regression
// tests of claim and bad input.
TEST(MessageKey, LimitIsInclusive) {
    for (std::size_t limit : {inbox::max_consumer_bytes, inbox::max_message_id_bytes}) {
        EXPECT_EQ(check_key_length(1, limit), KeyProblem::none);
        EXPECT_EQ(check_key_length(limit, limit), KeyProblem::none);
        EXPECT_EQ(check_key_length(limit + 1, limit), KeyProblem::too_long);
    }
}
