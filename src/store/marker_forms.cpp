// The stored forms of a message id and of a processing time as SQL functions (for the owner's
// writes through the view inbox.messages and the update from 1.0).
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/timestamp.h"
}

#include "pg/compat.hpp"
#include "store/marker_time.hpp"
#include "store/message_key.hpp"

namespace {

// The stored time of a processed_at, which must be finite and within the buckets' range (about
// 17,000 years around 2000).
inbox::MarkerTime storable_time(TimestampTz processed_at) {
    constexpr std::int64_t limit_seconds = std::int64_t{INT32_MAX} << inbox::bucket_bits;
    std::int64_t seconds = inbox::whole_seconds(processed_at);
    if (TIMESTAMP_NOT_FINITE(processed_at) || seconds >= limit_seconds || seconds < -limit_seconds)
        ereport(ERROR,
                (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                 errmsg("processed_at %s cannot be stored", timestamptz_to_str(processed_at)),
                 errhint("A marker's time is a finite time, in whole seconds.")));
    return inbox::marker_time(processed_at);
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_message_key);
PGDLLEXPORT Datum inbox_message_key(PG_FUNCTION_ARGS) {
    text* id = PG_GETARG_TEXT_PP(0);
    std::size_t length = VARSIZE_ANY_EXHDR(id);
    auto* key = static_cast<bytea*>(palloc(VARHDRSZ + length + inbox::uuid_bytes + 1));
    std::size_t stored = inbox::encode_message_id(VARDATA_ANY(id), length,
                                                  reinterpret_cast<std::uint8_t*>(VARDATA(key)));
    SET_VARSIZE(key, VARHDRSZ + stored);
    PG_RETURN_BYTEA_P(key);
}

PG_FUNCTION_INFO_V1(inbox_marker_time_bucket);
PGDLLEXPORT Datum inbox_marker_time_bucket(PG_FUNCTION_ARGS) {
    PG_RETURN_INT32(storable_time(PG_GETARG_TIMESTAMPTZ(0)).bucket);
}

PG_FUNCTION_INFO_V1(inbox_marker_time_offset);
PGDLLEXPORT Datum inbox_marker_time_offset(PG_FUNCTION_ARGS) {
    PG_RETURN_CHAR(static_cast<char>(storable_time(PG_GETARG_TIMESTAMPTZ(0)).offset));
}
}
