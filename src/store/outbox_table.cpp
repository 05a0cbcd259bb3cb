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

// The verdict on the table last asked about, kept until its relcache entry is invalidated:
// whatever changes it (a column, a constraint, a trigger, a rule, row-level security) does so.
struct Verdict {
    Oid table;  // InvalidOid: none kept
    bool as_created;
};
Verdict kept_verdict = {InvalidOid, false};
void forget_verdict(Oid relid) {
    if (relid == InvalidOid || relid == kept_verdict.table) kept_verdict.table = InvalidOid;
}

}  // namespace

bool outbox_table_as_created(Relation table) {
    if (kept_verdict.table == RelationGetRelid(table)) return kept_verdict.as_created;
    pg::forget_on_relcache_invalidation(forget_verdict);
    kept_verdict = {
        RelationGetRelid(table),
        pg::plain_table(table) && pg::columns_as_created(RelationGetDescr(table), column_names,
                                                         column_types, outbox_columns)};
    return kept_verdict.as_created;
}
