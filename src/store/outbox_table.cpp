// See outbox_table.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "utils/rel.h"
}

#include "pg/table_shape.hpp"
#include "store/outbox_table.hpp"

namespace {

const char* const column_names[outbox_columns] = {
    "ordinal",  "created_at",    "not_before", "dead_at",        "id",
    "attempts", "destination",   "key",        "leased_by",      "headers",
    "payload",  "payload_bytes", "last_error", "cause_consumer", "cause_message_id"};
const Oid column_types[outbox_columns] = {
    INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TIMESTAMPTZOID, UUIDOID, INT4OID, TEXTOID, TEXTOID,
    TEXTOID, JSONBOID,       JSONBOID,       BYTEAOID,       TEXTOID, TEXTOID, TEXTOID};

}  // namespace

bool outbox_table_as_created(Relation table) {
    return pg::plain_table(table) && pg::columns_as_created(RelationGetDescr(table), column_names,
                                                            column_types, outbox_columns);
}
