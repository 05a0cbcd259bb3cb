// See outbox_insert.hpp.
extern "C" {
#include "postgres.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/rel.h"
}

#include "pg/compat.hpp"
#include "pg/kept_indexes.hpp"
#include "pg/relcache_invalidation.hpp"
#include "pg/spi.hpp"
#include "store/marker_table.hpp"
#include "store/outbox_insert.hpp"
#include "store/outbox_table.hpp"

namespace {

// The outbox's table and sequence, found once and forgotten at any relcache invalidation of
// either (DROP EXTENSION, an update).
struct OutboxTarget {
    bool found;
    Oid table;
    Oid sequence;
};
OutboxTarget cached_target = {false, InvalidOid, InvalidOid};
// The table's indexes as a send opens them (see kept_indexes.hpp).
pg::KeptIndexes outbox_indexes = pg::no_kept_indexes;
void forget_target(Oid relid) {
    if (relid == InvalidOid || relid == cached_target.table || relid == cached_target.sequence)
        cached_target.found = false;
    pg::forget_kept_indexes(&outbox_indexes, relid);
}

const OutboxTarget* outbox_target() {
    if (cached_target.found) return &cached_target;
    pg::forget_on_relcache_invalidation(forget_target);
    cached_target = {true, find_inbox_relation("outbox_messages", NoLock),
                     find_inbox_relation("outbox_ordinal", NoLock)};
    return &cached_target;
}

// The row of the message: every NOT NULL column has its value, so ExecConstraints has nothing
// to check.
void fill_row(TupleTableSlot* row, int64 ordinal, const Datum values[outgoing_values],
              const bool nulls[outgoing_values]) {
    Datum* column = row->tts_values;
    bool* null = row->tts_isnull;
    for (int i = 0; i < outbox_columns; i++) null[i] = true;
    auto set = [&](OutboxColumn i, Datum value, bool is_null) {
        column[i] = value;
        null[i] = is_null;
    };
    set(ordinal_column, Int64GetDatum(ordinal), false);
    set(created_at_column, values[sent_at_value], false);
    set(not_before_column, values[sent_at_value], false);
    set(id_column, values[id_value], false);
    set(attempts_column, Int32GetDatum(0), false);
    set(destination_column, values[destination_value], false);
    set(key_column, values[key_value], nulls[key_value]);
    set(headers_column, values[headers_value], nulls[headers_value]);
    set(payload_column, values[payload_value], nulls[payload_value]);
    set(payload_bytes_column, values[payload_bytes_value], nulls[payload_bytes_value]);
    set(cause_consumer_column, values[cause_consumer_value], nulls[cause_consumer_value]);
    set(cause_message_id_column, values[cause_message_id_value], nulls[cause_message_id_value]);
    ExecStoreVirtualTuple(row);
}

void insert_into(Relation table, Oid sequence, const Datum values[outgoing_values],
                 const bool nulls[outgoing_values]) {
    EState* estate = CreateExecutorState();
    estate->es_output_cid = GetCurrentCommandId(true);
    ResultRelInfo* target = makeNode(ResultRelInfo);
    // No range table: nothing below reads it (it serves permissions, triggers and the messages
    // of CHECK constraints, none of which applies here).
    InitResultRelInfo(target, table, 0, nullptr, 0);
    pg::open_kept_indexes(&outbox_indexes, target);
    TupleTableSlot* row = ExecInitExtraTupleSlot(estate, RelationGetDescr(table), &TTSOpsVirtual);
    fill_row(row, nextval_internal(sequence, true), values, nulls);
    table_tuple_insert(table, row, estate->es_output_cid, 0, nullptr);
    pg::insert_index_tuples(target, row, estate);
    ExecResetTupleTable(estate->es_tupleTable, false);
    ExecCloseIndices(target);
    FreeExecutorState(estate);
}

// Whether the direct insert wrote the message: false, with nothing done, when only the
// statement does what the table asks.
bool insert_directly(Oid owner, const Datum values[outgoing_values],
                     const bool nulls[outgoing_values]) {
    // A permission hook (sepgsql, pgaudit) must see the statement.
    if (IsInParallelMode() || ExecutorCheckPerms_hook != nullptr) return false;
    const OutboxTarget* found = outbox_target();
    if (!OidIsValid(found->table) || !OidIsValid(found->sequence)) return false;
    Relation table = try_table_open(found->table, RowExclusiveLock);
    if (table == nullptr) return false;
    // Decided with the table locked, which brings the invalidations of what committed meanwhile.
    const OutboxTarget* target = outbox_target();
    // The statement's permission check, made on every insert as the executor makes it: grants
    // and role memberships change without a relcache invalidation.
    bool direct = RelationGetRelid(table) == target->table && outbox_table_as_created(table) &&
                  pg_class_aclcheck(RelationGetRelid(table), owner, ACL_INSERT) == ACLCHECK_OK;
    if (direct) insert_into(table, target->sequence, values, nulls);
    table_close(table, NoLock);
    // As after the statement: what follows in the transaction sees the message.
    if (direct) CommandCounterIncrement();
    return direct;
}

// Every name qualified: the plan is re-analysed under the caller's search_path when it changes.
const char* const insert_message_sql =
    "INSERT INTO inbox.outbox_messages (ordinal, created_at, not_before, id, destination, key, "
    "headers, payload, payload_bytes, cause_consumer, cause_message_id) "
    "VALUES (pg_catalog.nextval('inbox.outbox_ordinal'::pg_catalog.regclass), $1, $1, $2, $3, $4, "
    "$5, $6, $7, $8, $9)";
const Oid insert_message_types[outgoing_values] = {
    TIMESTAMPTZOID, UUIDOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, BYTEAOID, TEXTOID, TEXTOID};
SPIPlanPtr insert_message_plan = nullptr;

void insert_with_statement(const Datum values[outgoing_values], const bool nulls[outgoing_values]) {
    if (insert_message_plan == nullptr)
        insert_message_plan =
            pg::prepare_kept_plan(insert_message_sql, outgoing_values, insert_message_types);
    char null_flags[outgoing_values];
    for (int i = 0; i < outgoing_values; i++) null_flags[i] = nulls[i] ? 'n' : ' ';
    pg::spi_connect();
    pg::execute_plan(insert_message_plan, insert_message_sql, values, null_flags);
    SPI_finish();
}

}  // namespace

Oid outbox_messages_table() {
    return outbox_target()->table;
}

void insert_outgoing_message(Oid owner, const Datum values[outgoing_values],
                             const bool nulls[outgoing_values]) {
    Oid caller;
    int security_context;
    GetUserIdAndSecContext(&caller, &security_context);
    // Inside a security-restricted operation: a trigger or an index expression on the table
    // cannot change the caller's session. On error, transaction abort puts the caller back.
    SetUserIdAndSecContext(
        owner, security_context | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    if (!insert_directly(owner, values, nulls)) insert_with_statement(values, nulls);
    SetUserIdAndSecContext(caller, security_context);
}
