// See direct_done.hpp. The rules are inbox.relay_done_messages's (sql/inbox--1.2--1.3.sql), which
// regress outbox_take_editions holds this file to.
extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/uuid.h"
}

#include <cstring>

#include "outbox/direct_done.hpp"
#include "pg/compat.hpp"
#include "pg/concurrent_change.hpp"
#include "pg/index_writer.hpp"
#include "pg/table_shape.hpp"
#include "store/marker_table.hpp"
#include "store/outbox_table.hpp"

namespace {

const AttrNumber key_columns[] = {id_column + 1};

int uuid_order(const void* a, const void* b) {
    return std::memcmp(*static_cast<const pg_uuid_t* const*>(a),
                       *static_cast<const pg_uuid_t* const*>(b), UUID_LEN);
}

// The ids asked for, each once, in the order of the primary key (neighbours share its pages); a
// palloc'd array of *count pointers into the array.
const pg_uuid_t** distinct_ids(ArrayType* ids, int* count) {
    Datum* elements;
    bool* nulls;
    int given;
    deconstruct_array(ids, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR, &elements, &nulls, &given);
    auto** distinct = static_cast<const pg_uuid_t**>(palloc(sizeof(pg_uuid_t*) * (given + 1)));
    int kept = 0;
    for (int i = 0; i < given; i++)
        if (!nulls[i]) distinct[kept++] = DatumGetUUIDP(elements[i]);
    qsort(distinct, kept, sizeof(pg_uuid_t*), uuid_order);
    *count = 0;
    for (int i = 0; i < kept; i++)
        if (*count == 0 || uuid_order(&distinct[*count - 1], &distinct[i]) != 0)
            distinct[(*count)++] = distinct[i];
    return distinct;
}

// The message in `found` deleted, as the statement's DELETE does: waiting for a transaction that
// writes or locks it; when one changed it since the snapshot (a take, a failure, a release that
// committed meanwhile), its latest version locked and deleted instead (under REPEATABLE READ, a
// serialization failure). False when it is gone (another relay settled it).
bool delete_message(Relation messages, TupleTableSlot* found, CommandId command,
                    Snapshot snapshot) {
    TM_FailureData failure;
    TM_Result result = pg::delete_row(messages, &found->tts_tid, command, snapshot, &failure);
    if (result == TM_Updated && !IsolationUsesXactSnapshot()) {
        result = table_tuple_lock(messages, &found->tts_tid, snapshot, found, command,
                                  LockTupleExclusive, LockWaitBlock,
                                  TUPLE_LOCK_FLAG_FIND_LAST_VERSION, &failure);
        if (result == TM_Ok)
            result = pg::delete_row(messages, &found->tts_tid, command, snapshot, &failure);
    }
    switch (result) {
        case TM_Ok:
            return true;
        case TM_Updated:
        case TM_Deleted:
            pg::refuse_change_after_snapshot(result);
            return false;
        default:
            elog(ERROR, "unexpected result %d settling an outgoing message", (int)result);
    }
    return false;
}

// The delivered record of the message in `found` (just deleted), as inbox.outbox shows it.
void record_delivered(Relation delivered, pg::IndexWriter writer, TupleTableSlot* found,
                      TupleTableSlot* row, TimestampTz now) {
    slot_getallattrs(found);
    ExecClearTuple(row);
    auto copy = [&](DeliveredColumn to, OutboxColumn from) {
        row->tts_values[to] = found->tts_values[from];
        row->tts_isnull[to] = found->tts_isnull[from];
    };
    copy(delivered_created_at_column, created_at_column);
    row->tts_values[delivered_at_column] = TimestampTzGetDatum(now);
    row->tts_isnull[delivered_at_column] = false;
    copy(delivered_id_column, id_column);
    copy(delivered_attempts_column, attempts_column);
    copy(delivered_destination_column, destination_column);
    copy(delivered_key_column, key_column);
    copy(delivered_last_error_column, last_error_column);
    copy(delivered_cause_consumer_column, cause_consumer_column);
    copy(delivered_cause_message_id_column, cause_message_id_column);
    ExecStoreVirtualTuple(row);
    table_tuple_insert(delivered, row, writer.estate->es_output_cid, 0, nullptr);
    pg::insert_index_tuples(writer.target, row, writer.estate);
}

}  // namespace

bool direct_done_possible(bool keep, DoneTables* tables) {
    // A permission hook (sepgsql, pgaudit) must see the statement.
    if (IsInParallelMode() || ExecutorCheckPerms_hook != nullptr) return false;
    *tables = {find_inbox_relation("outbox_messages", RowExclusiveLock), InvalidOid,
               keep ? find_inbox_relation("outbox_delivered", RowExclusiveLock) : InvalidOid};
    if (!OidIsValid(tables->messages) || (keep && !OidIsValid(tables->delivered))) return false;
    // Decided with the tables locked, which brings the invalidations of what committed meanwhile.
    Relation messages = table_open(tables->messages, NoLock);
    tables->messages_key = pg::primary_key_index(messages);
    bool direct = outbox_table_as_created(messages) &&
                  pg::btree_on(tables->messages_key, tables->messages, key_columns, 1);
    table_close(messages, NoLock);
    if (direct && keep) {
        Relation delivered = table_open(tables->delivered, NoLock);
        direct = outbox_delivered_as_created(delivered);
        table_close(delivered, NoLock);
    }
    return direct;
}

int32 settle_directly(const DoneTables& tables, ArrayType* ids, bool keep, TimestampTz now) {
    int count;
    const pg_uuid_t** wanted = distinct_ids(ids, &count);
    Relation messages = table_open(tables.messages, RowExclusiveLock);
    // As the statement's plan checks: a publication of the table's deletes needs its identity.
    CheckCmdReplicaIdentity(messages, CMD_DELETE);
    Relation key = index_open(tables.messages_key, AccessShareLock);
    Relation delivered = keep ? table_open(tables.delivered, RowExclusiveLock) : nullptr;
    // A snapshot of its own, as the statement's would be.
    PushActiveSnapshot(GetTransactionSnapshot());
    Snapshot snapshot = GetActiveSnapshot();
    CommandId command = GetCurrentCommandId(true);
    pg::IndexWriter writer = {};
    TupleTableSlot* row = nullptr;
    if (keep) {
        writer = pg::open_index_writer(delivered, command, false);
        row = MakeSingleTupleTableSlot(RelationGetDescr(delivered), &TTSOpsVirtual);
    }
    IndexScanDesc scan = pg::begin_index_scan(messages, key, snapshot, 1);
    TupleTableSlot* found = table_slot_create(messages, nullptr);

    int32 settled = 0;
    for (int i = 0; i < count; i++) {
        CHECK_FOR_INTERRUPTS();
        ScanKeyData by_id;
        ScanKeyInit(&by_id, 1, BTEqualStrategyNumber, F_UUID_EQ, UUIDPGetDatum(wanted[i]));
        index_rescan(scan, &by_id, 1, nullptr, 0);
        // The primary key: one version of the message at most is visible to the snapshot.
        if (index_getnext_slot(scan, ForwardScanDirection, found) &&
            delete_message(messages, found, command, snapshot)) {
            settled++;
            if (keep) record_delivered(delivered, writer, found, row, now);
        }
    }

    ExecDropSingleTupleTableSlot(found);
    index_endscan(scan);
    if (keep) {
        ExecDropSingleTupleTableSlot(row);
        pg::close_index_writer(writer);
        table_close(delivered, NoLock);
    }
    PopActiveSnapshot();
    // As after the statement: what follows in the transaction sees the settlement.
    CommandCounterIncrement();
    index_close(key, AccessShareLock);
    table_close(messages, NoLock);
    return settled;
}
