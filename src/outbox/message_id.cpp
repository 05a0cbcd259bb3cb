// See message_id.hpp.
#include "outbox/message_id.hpp"

#include "pg/strong_random.hpp"

pg_uuid_t outbox_message_id(TimestampTz sent_at) {
    constexpr int timestamp_bytes = 6;
    pg_uuid_t id;
    pg::strong_random_bytes(id.data + timestamp_bytes, UUID_LEN - timestamp_bytes);
    constexpr int64 unix_epoch_offset =
        static_cast<int64>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
    auto milliseconds = static_cast<uint64>((sent_at + unix_epoch_offset) / 1000);
    for (int byte = 0; byte < timestamp_bytes; byte++)
        id.data[byte] =
            static_cast<unsigned char>(milliseconds >> (8 * (timestamp_bytes - 1 - byte)));
    id.data[6] = static_cast<unsigned char>((id.data[6] & 0x0F) | 0x70);
    id.data[8] = static_cast<unsigned char>((id.data[8] & 0x3F) | 0x80);
    return id;
}
