// The id of an outgoing message: a UUIDv7, the milliseconds since 1970 of its send in the first
// 48 bits (ids grow with time and are appended at the right of the primary key), then version 7,
// random bits and the RFC 4122 variant. The SQL edition builds the same layout from
// gen_random_uuid() (inbox.send_message; regress outbox_sql_edition compares both).
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "utils/uuid.h"
}

pg_uuid_t outbox_message_id(TimestampTz sent_at);
