// See direct_done.hpp. The rules are inbox.relay_done_messages's (sql/inbox--1.2--1.3.sql), which
// regress outbox_take_editions holds this file to.
extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/itup.h"
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

// The wanted messages found by walking the primary key from the first wanted id on, where a
// descent from its root for each id cost 5,600 instructions: the ids of a batch were sent one
// after another and lie side by side in the index (they grow with time, UUIDv7), mostly a step
// apart. More than `steps_before_descent` entries before the next wanted id, the walk descends to
// it, so that ids far apart cost a descent each, as before.
constexpr int steps_before_descent = 32;
struct KeyWalk {
    IndexScanDesc scan;  // its index tuples wanted (xs_want_itup): their ids
    const pg_uuid_t** wanted;
    int count;
    int next;         // the first wanted id not yet found nor passed
    bool positioned;  // the scan stands at an entry before wanted[next] (or at its start)
    int steps;        // entries passed since the last id found or the last descent
};

KeyWalk start_walk(IndexScanDesc scan, const pg_uuid_t** wanted, int count) {
    scan->xs_want_itup = true;
    return {scan, wanted, count, 0, false, 0};
}

// The version the snapshot sees of the next wanted message that has one, stored in `found`;
// false when none is left. The wanted ids it passes have none (settled, or never sent).
bool find_next(KeyWalk& walk, TupleTableSlot* found) {
    while (walk.next < walk.count) {
        CHECK_FOR_INTERRUPTS();
        if (!walk.positioned) {
            ScanKeyData from;
            ScanKeyInit(&from, 1, BTGreaterEqualStrategyNumber, F_UUID_GE,
                        UUIDPGetDatum(walk.wanted[walk.next]));
            index_rescan(walk.scan, &from, 1, nullptr, 0);
            walk.positioned = true;
            walk.steps = 0;
        }
        if (index_getnext_tid(walk.scan, ForwardScanDirection) == nullptr) break;
        bool null;
        const pg_uuid_t* id =
            DatumGetUUIDP(index_getattr(walk.scan->xs_itup, 1, walk.scan->xs_itupdesc, &null));
        while (walk.next < walk.count && std::memcmp(walk.wanted[walk.next], id, UUID_LEN) < 0)
            walk.next++;
        if (walk.next == walk.count) break;
        if (std::memcmp(walk.wanted[walk.next], id, UUID_LEN) > 0) {
            // Another message's entry, or an old version's.
            if (++walk.steps > steps_before_descent) walk.positioned = false;
            continue;
        }
        // An entry of the id: of the version the snapshot sees, or of a dead one (the id's
        // later entries are looked at next).
        if (index_fetch_heap(walk.scan, found)) {
            walk.next++;
            walk.steps = 0;
            return true;
        }
    }
    walk.next = walk.count;
    return false;
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

// The delivered records of a settlement, written as COPY writes its rows (table_multi_insert):
// one WAL record and one buffer lock for the records that share a page, not one per record.
// Written each `records_per_write`, which bounds the memory of a settlement of many ids.
constexpr int records_per_write = 1000;
struct DeliveredRecords {
    Relation table;
    pg::IndexWriter writer;
    // The table's row shape, copied: a slot of the relation's own counts a reference to it in
    // the resource owner, whose forgetting a slot of hundreds searches (5,500 instructions a
    // record to create and drop them).
    TupleDesc shape;
    TupleTableSlot** slots;  // palloc'd, records_per_write; created when first used
    int created;
    int used;
};

DeliveredRecords open_records(Relation delivered, CommandId command) {
    auto** slots =
        static_cast<TupleTableSlot**>(palloc(sizeof(TupleTableSlot*) * records_per_write));
    return {delivered,
            pg::open_index_writer(delivered, command, false),
            CreateTupleDescCopy(RelationGetDescr(delivered)),
            slots,
            0,
            0};
}

// The records kept so far written, with their primary key entries.
void write_records(DeliveredRecords& records) {
    if (records.used == 0) return;
    table_multi_insert(records.table, records.slots, records.used,
                       records.writer.estate->es_output_cid, 0, nullptr);
    for (int i = 0; i < records.used; i++) {
        pg::insert_index_tuples(records.writer.target, records.slots[i], records.writer.estate);
        ExecClearTuple(records.slots[i]);
    }
    records.used = 0;
}

void close_records(DeliveredRecords& records) {
    write_records(records);
    for (int i = 0; i < records.created; i++) ExecDropSingleTupleTableSlot(records.slots[i]);
    FreeTupleDesc(records.shape);
    pg::close_index_writer(records.writer);
}

// The delivered record of the message in `found` (just deleted), as inbox.outbox shows it: a
// copy of its columns, `found` moving on to the next message before the record is written.
void record_delivered(DeliveredRecords& records, TupleTableSlot* found, TimestampTz now) {
    if (records.used == records_per_write) write_records(records);
    if (records.used == records.created)
        records.slots[records.created++] =
            MakeSingleTupleTableSlot(records.shape, &TTSOpsHeapTuple);
    TupleTableSlot* row = records.slots[records.used++];
    slot_getallattrs(found);
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
    ExecMaterializeSlot(row);
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
    DeliveredRecords records = {};
    if (keep) records = open_records(delivered, command);
    IndexScanDesc scan = pg::begin_index_scan(messages, key, snapshot, 1);
    TupleTableSlot* found = table_slot_create(messages, nullptr);

    int32 settled = 0;
    KeyWalk walk = start_walk(scan, wanted, count);
    while (find_next(walk, found)) {
        if (delete_message(messages, found, command, snapshot)) {
            settled++;
            if (keep) record_delivered(records, found, now);
        }
    }

    ExecDropSingleTupleTableSlot(found);
    index_endscan(scan);
    if (keep) {
        close_records(records);
        table_close(delivered, NoLock);
    }
    PopActiveSnapshot();
    // As after the statement: what follows in the transaction sees the settlement.
    CommandCounterIncrement();
    index_close(key, AccessShareLock);
    table_close(messages, NoLock);
    return settled;
}
