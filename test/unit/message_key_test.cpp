#include "message_key.hpp"

#include <gtest/gtest.h>

using inbox::check_key_length;
using inbox::KeyProblem;

TEST(MessageKey, EmptyKeyIsRejected) {
    EXPECT_EQ(check_key_length(0, inbox::max_consumer_bytes), KeyProblem::empty);
}

TEST(MessageKey, LimitIsInclusive) {
    EXPECT_EQ(check_key_length(64, inbox::max_consumer_bytes), KeyProblem::none);
    EXPECT_EQ(check_key_length(65, inbox::max_consumer_bytes), KeyProblem::too_long);
    EXPECT_EQ(check_key_length(128, inbox::max_message_id_bytes), KeyProblem::none);
    EXPECT_EQ(check_key_length(129, inbox::max_message_id_bytes), KeyProblem::too_long);
}

TEST(MessageKey, ContractLimits) {
    EXPECT_EQ(inbox::max_consumer_bytes, 64u);
    EXPECT_EQ(inbox::max_message_id_bytes, 128u);
}
