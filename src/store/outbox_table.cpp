// See outbox_table.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "utils/rel.h"
}

#include "pg/relcache_invalidation.hpp"
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

const char* const delivered_names[delivered_columns] = {
    "created_at",     "delivered_at",    "id", "attempts", "destination", "key", "last_error",
    "cause_consumer", "cause_message_id"};
const Oid delivered_types[delivered_columns] = {
    TIMESTAMPTZOID, TIMESTAMPTZOID, UUIDOID, INT4OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};

// The verdict on a table last asked about, kept until its relcache entry is invalidated:
// whatever changes it (a column, a constraint, a trigger, a rule, row-level security) does so.
struct Verdict {
    Oid table;  // InvalidOid: none kept
    bool as_created;
};
Verdict kept_verdicts[2] = {{InvalidOid, false}, {InvalidOid, false}};  // messages, delivered
void forget_verdicts(Oid relid) {
    for (Verdict& kept : kept_verdicts)
        if (relid == InvalidOid || relid == kept.table) kept.table = InvalidOid;
}

bool as_created(Verdict* kept, Relation table, const char* const names[], const Oid types[],
                int count) {
    if (kept->table == RelationGetRelid(table)) return kept->as_created;
    pg::forget_on_relcache_invalidation(forget_verdicts);
    *kept = {RelationGetRelid(table),
             pg::plain_table(table) &&
                 pg::columns_as_created(RelationGetDescr(table), names, types, count)};
    return kept->as_created;
}

}  // namespace

bool outbox_table_as_created(Relation table) {
    return as_created(&kept_verdicts[0], table, column_names, column_types, outbox_columns);
}

bool outbox_delivered_as_created(Relation table) {
    return as_created(&kept_verdicts[1], table, delivered_names, delivered_types,
                      delivered_columns);
}
