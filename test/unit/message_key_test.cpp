#include "store/message_key.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

using inbox::check_identity_length;
using inbox::LengthProblem;

TEST(MessageKey, EmptyKeyIsRejected) {
    EXPECT_EQ(check_identity_length(0, inbox::max_consumer_bytes), LengthProblem::empty);
}

// The limits themselves (64 and 128 bytes) are checked where users meet them, in the regression
// tests of claim and bad input.
TEST(MessageKey, LimitIsInclusive) {
    for (std::size_t limit : {inbox::max_consumer_bytes, inbox::max_message_id_bytes}) {
        EXPECT_EQ(check_identity_length(1, limit), LengthProblem::none);
        EXPECT_EQ(check_identity_length(limit, limit), LengthProblem::none);
        EXPECT_EQ(check_identity_length(limit + 1, limit), LengthProblem::too_long);
    }
}

namespace {

std::string round_trip(const std::string& id, std::size_t* stored_length) {
    std::uint8_t stored[inbox::max_message_key_bytes];
    *stored_length = inbox::encode_message_id(id.data(), id.size(), stored);
    std::string text(inbox::decoded_message_id_length(stored, *stored_length), '?');
    inbox::decode_message_id(stored, *stored_length, text.data());
    return text;
}

}  // namespace

TEST(MessageIdEncoding, CanonicalUuidIsItsSixteenBytes) {
    std::size_t stored = 0;
    EXPECT_EQ(round_trip("0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f", &stored),
              "0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f");
    EXPECT_EQ(stored, 16u);
}

TEST(MessageIdEncoding, EveryOtherIdIsKeptAsItsBytes) {
    for (const char* id :
         {"0B6C1A2E-7F3A-4C9D-8E21-5A6B7C8D9E0F",  // upper case: not canonical
          "{0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f}", "0b6c1a2e7f3a4c9d8e215a6b7c8d9e0f",
          "0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0g", "0b6c1a2e+7f3a-4c9d-8e21-5a6b7c8d9e0f",
          "orders-2026-000123456", "m", "\x01\xff"}) {
        std::size_t stored = 0;
        EXPECT_EQ(round_trip(id, &stored), id);
        EXPECT_EQ(stored, std::string(id).size()) << id;
    }
}

TEST(MessageIdEncoding, SixteenByteIdsCannotPassForUuids) {
    std::size_t stored = 0;
    EXPECT_EQ(round_trip("abcdefghijklmnop", &stored), "abcdefghijklmnop");
    EXPECT_EQ(stored, 17u);
    // and the 17-byte form of a 16-byte id is not that of a 17-byte id
    std::size_t other = 0;
    EXPECT_EQ(round_trip("abcdefghijklmnopq", &other), "abcdefghijklmnopq");
    EXPECT_EQ(other, 17u);
}

TEST(MessageIdEncoding, DistinctIdsNeverShareAStoredForm) {
    const char* ids[] = {"abcdefghijklmnop", "0b6c1a2e-7f3a-4c9d-8e21-5a6b7c8d9e0f",
                         "0B6C1A2E-7F3A-4C9D-8E21-5A6B7C8D9E0F",
                         "\x0b\x6c\x1a\x2e\x7f\x3a\x4c\x9d\x8e\x21\x5a\x6b\x7c\x8d\x9e\x0f"};
    std::set<std::string> forms;
    for (const char* id : ids) {
        std::uint8_t stored[inbox::max_message_key_bytes];
        std::size_t length = inbox::encode_message_id(id, std::strlen(id), stored);
        forms.insert(std::string(reinterpret_cast<char*>(stored), length));
    }
    EXPECT_EQ(forms.size(), std::size(ids));
}
