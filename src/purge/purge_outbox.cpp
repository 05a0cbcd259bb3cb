// See purge_outbox.hpp. An id is a UUIDv7 whose first 48 bits are the send's milliseconds since
// 1970, and a message is delivered after it was sent: every message delivered before the cutoff
// has an id below the cutoff's millisecond followed by zeros. That bound makes each batch a
// range of the primary key, however many newer messages the table holds; delivered_at decides.
// The next batch starts after the last id deleted, so that no scan walks again the index
// entries of the rows deleted before, which stay until VACUUM.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/timestamp.h"
}

#include <cstring>

#include "purge/purge_outbox.hpp"
#include "store/marker_table.hpp"

namespace {

MarkerStatement delete_delivered = {
    .sql =
        "DELETE FROM inbox.outbox_delivered m WHERE m.id OPERATOR(pg_catalog.=) ANY (ARRAY("
        "SELECT o.id FROM inbox.outbox_delivered o "
        "WHERE o.id OPERATOR(pg_catalog.>) $1 AND o.id OPERATOR(pg_catalog.<) $2 "
        "AND o.delivered_at OPERATOR(pg_catalog.<) $3 "
        "ORDER BY o.id LIMIT $4)) RETURNING m.id",
    .nargs = 4,
    .argtypes = {UUIDOID, UUIDOID, TIMESTAMPTZOID, INT8OID},
    .plan = nullptr};

// The smallest UUIDv7 of the cutoff's millisecond.
pg_uuid_t uuid_floor(TimestampTz cutoff) {
    int64 unix_ms =
        cutoff / 1000 + (int64)(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000;
    pg_uuid_t floor = {};
    for (int i = 0; i < 6; i++)
        floor.data[i] = static_cast<unsigned char>(static_cast<uint64>(unix_ms) >> (40 - 8 * i));
    return floor;
}

}  // namespace

OutboxCursor outbox_cursor_start() {
    return OutboxCursor{.after = {}};
}

int64 delete_delivered_messages(OutboxCursor* cursor, TimestampTz cutoff, int64 limit) {
    pg_uuid_t below = uuid_floor(cutoff);
    Datum values[4] = {UUIDPGetDatum(&cursor->after), UUIDPGetDatum(&below),
                       TimestampTzGetDatum(cutoff), Int64GetDatum(limit)};
    execute_as_store_owner(&delete_delivered, values);
    for (uint64 i = 0; i < SPI_processed; i++) {
        bool isnull = false;
        Datum id = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
        const pg_uuid_t* deleted = DatumGetUUIDP(id);
        if (std::memcmp(deleted->data, cursor->after.data, UUID_LEN) > 0) cursor->after = *deleted;
    }
    return static_cast<int64>(SPI_processed);
}
