// See message_id.hpp.
#include "outbox/message_id.hpp"

extern "C" {
#include "port.h"
}

pg_uuid_t outbox_message_id(TimestampTz sent_at) {
    pg_uuid_t id;
    if (!pg_strong_random(id.data, UUID_LEN))
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("could not generate random values for a message id")));
    constexpr int64 unix_epoch_offset =
        static_cast<int64>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
    auto milliseconds = static_cast<uint64>((sent_at + unix_epoch_offset) / 1000);
    for (int byte = 0; byte < 6; byte++)
        id.data[byte] = static_cast<unsigned char>(milliseconds >> (8 * (5 - byte)));
    id.data[6] = static_cast<unsigned char>((id.data[6] & 0x0F) | 0x70);
    id.data[8] = static_cast<unsigned char>((id.data[8] & 0x3F) | 0x80);
    return id;
}
