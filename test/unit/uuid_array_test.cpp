// relay_done's and relay_failed's ids in PostgreSQL's binary uuid[] format (array_recv): the
// header, then each id's length and 16 bytes; the relay suite has the server read it.
#include "relay/uuid_array.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using inbox_relay::binary_uuid_array;

namespace {

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int value : values) out += static_cast<char>(value);
    return out;
}

TEST(UuidArrayTest, OneDimensionOfUuidsWithTheirLengths) {
    std::string expected = bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x0b, 0x86,  // ndim, flags, uuid
                                  0, 0, 0, 2, 0, 0, 0, 1,                    // 2 ids from 1
                                  0, 0, 0, 16});
    expected += bytes({0x01, 0x90, 0xc3, 0xc2, 0x7a, 0x1b, 0x7c, 0x3d, 0x8e, 0x4f, 0x00, 0x11, 0x22,
                       0x33, 0x44, 0xff});
    expected += bytes({0, 0, 0, 16});
    expected += std::string(16, '\0');
    EXPECT_EQ(binary_uuid_array(
                  {"0190c3c2-7a1b-7c3d-8e4f-0011223344FF", "00000000000000000000000000000000"}),
              expected);
}

TEST(UuidArrayTest, NoIdsIsAnArrayOfNoDimension) {
    EXPECT_EQ(binary_uuid_array({}), bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b, 0x86}));
}

TEST(UuidArrayTest, RefusesWhatIsNotAUuid) {
    for (const char* id :
         {"", "0190c3c2", "0190c3c2-7a1b-7c3d-8e4f-0011223344f",
          "0190c3c2-7a1b-7c3d-8e4f-0011223344ff0", "0190c3c2-7a1b-7c3d-8e4f-00112233445g"}) {
        EXPECT_THROW(binary_uuid_array({id}), std::invalid_argument) << id;
    }
}

}  // namespace
