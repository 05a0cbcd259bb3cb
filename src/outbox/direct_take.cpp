// See direct_take.hpp. The rules are inbox.relay_take_messages's (sql/inbox--1.2--1.3.sql), which
// regress outbox_take_editions holds this file to.
extern "C" {
#include "postgres.h"
#include "access/detoast.h"
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
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
}

#include <cstring>

#include "outbox/direct_take.hpp"
#include "pg/compat.hpp"
#include "pg/concurrent_change.hpp"
#include "pg/index_writer.hpp"
#include "pg/relcache_invalidation.hpp"
#include "pg/table_shape.hpp"
#include "store/marker_table.hpp"
#include "store/outbox_table.hpp"

namespace {

// The table and the two indexes the take reads, and whether they are as the extension creates
// them, decided once per relcache entry of any of the three.
struct TakeTarget {
    bool found;
    TakeTables tables;
    bool decided;
    bool direct;
};
TakeTarget cached_target = {};
void forget_target(Oid relid) {
    const TakeTables& tables = cached_target.tables;
    if (relid == InvalidOid || relid == tables.table || relid == tables.undelivered ||
        relid == tables.key_order)
        cached_target = {};
}

const TakeTarget* take_target() {
    if (cached_target.found) return &cached_target;
    pg::forget_on_relcache_invalidation(forget_target);
    cached_target = {true,
                     {find_inbox_relation("outbox_messages", NoLock),
                      find_inbox_relation("outbox_messages_undelivered", NoLock),
                      find_inbox_relation("outbox_messages_key_order", NoLock)},
                     false,
                     false};
    return &cached_target;
}

constexpr AttrNumber attribute(OutboxColumn column) {
    return static_cast<AttrNumber>(column + 1);
}

const AttrNumber undelivered_columns[] = {attribute(ordinal_column)};
const AttrNumber key_order_columns[] = {attribute(destination_column), attribute(key_column),
                                        attribute(ordinal_column)};

// A row of the table, its columns read.
struct Message {
    Datum* values;
    bool* nulls;
    Datum get(OutboxColumn column) const { return values[column]; }
    bool null(OutboxColumn column) const { return nulls[column]; }
};

Message read_message(TupleTableSlot* slot) {
    slot_getallattrs(slot);
    return {slot->tts_values, slot->tts_isnull};
}

// Whether the message's version was written by the taking transaction (or one of its
// subtransactions): sent there, it is not committed and may yet roll back; failed or released
// there, its change is not yet everyone's. The take leaves it to the next one after the commit.
bool written_here(TupleTableSlot* slot) {
    bool null = false;
    Datum xmin = slot_getsysattr(slot, MinTransactionIdAttributeNumber, &null);
    return !null && TransactionIdIsCurrentTransactionId(DatumGetTransactionId(xmin));
}

// The destinations asked for, unpacked once.
struct DestinationFilter {
    bool any;
    Datum* names;
    bool* nulls;
    int count;
    Oid collation;
};

DestinationFilter destination_filter(ArrayType* destinations, Oid collation) {
    DestinationFilter filter = {destinations == nullptr, nullptr, nullptr, 0, collation};
    if (destinations != nullptr)
        deconstruct_array(destinations, TEXTOID, -1, false, TYPALIGN_INT, &filter.names,
                          &filter.nulls, &filter.count);
    return filter;
}

bool wanted(const DestinationFilter& filter, Datum destination) {
    if (filter.any) return true;
    for (int i = 0; i < filter.count; i++) {
        if (!filter.nulls[i] && DatumGetBool(DirectFunctionCall2Coll(texteq, filter.collation,
                                                                     destination, filter.names[i])))
            return true;
    }
    return false;
}

// The probe of a candidate's key: another undelivered message of its (destination, key) that is
// not dead and comes before it, or is leased and its lease has not expired.
struct KeyProbe {
    Relation index;
    IndexScanDesc scan;
    TupleTableSlot* other;
};

bool key_held_back(KeyProbe& probe, const Message& candidate, TimestampTz now) {
    ScanKeyData keys[2];
    ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, candidate.get(destination_column));
    keys[0].sk_collation = probe.index->rd_indcollation[0];
    ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, candidate.get(key_column));
    keys[1].sk_collation = probe.index->rd_indcollation[1];
    index_rescan(probe.scan, keys, 2, nullptr, 0);
    const pg_uuid_t* id = DatumGetUUIDP(candidate.get(id_column));
    int64 ordinal = DatumGetInt64(candidate.get(ordinal_column));
    while (index_getnext_slot(probe.scan, ForwardScanDirection, probe.other)) {
        Message other = read_message(probe.other);
        if (std::memcmp(DatumGetUUIDP(other.get(id_column)), id, sizeof(pg_uuid_t)) == 0 ||
            !other.null(dead_at_column))
            continue;
        if (DatumGetInt64(other.get(ordinal_column)) < ordinal) return true;
        if (!other.null(leased_by_column) &&
            DatumGetTimestampTz(other.get(not_before_column)) > now)
            return true;
    }
    return false;
}

enum class LeaseOutcome { leased, made_dead, left };

// The candidate's new version, written over it without waiting. A message another transaction
// writes or locks (a relay's take, a release) is left; one changed since the snapshot (settled,
// failed, released) too, and looked at again by the next take; under REPEATABLE READ, a
// serialization failure, as the statement's FOR UPDATE reports it.
LeaseOutcome lease(Relation table, TupleTableSlot* found, TupleTableSlot* row,
                   const TakeRequest& request, Datum not_before, CommandId command,
                   Snapshot snapshot) {
    Message old = read_message(found);
    ExecClearTuple(row);
    std::memcpy(row->tts_values, old.values, sizeof(Datum) * outbox_columns);
    std::memcpy(row->tts_isnull, old.nulls, sizeof(bool) * outbox_columns);
    int32 attempts = DatumGetInt32(old.get(attempts_column));
    // Its lease expired at the last attempt: each relay that took it stopped before settling it.
    bool dies = !old.null(leased_by_column) && attempts >= request.max_attempts;
    row->tts_values[not_before_column] = not_before;
    if (dies) {
        row->tts_isnull[leased_by_column] = true;
        row->tts_values[dead_at_column] = TimestampTzGetDatum(request.now);
        row->tts_isnull[dead_at_column] = false;
        row->tts_values[last_error_column] = PointerGetDatum(cstring_to_text(psprintf(
            "its lease expired %d times: each relay that took it stopped before settling it",
            attempts)));
        row->tts_isnull[last_error_column] = false;
    } else {
        row->tts_values[leased_by_column] = PointerGetDatum(request.relay);
        row->tts_isnull[leased_by_column] = false;
        row->tts_values[attempts_column] = Int32GetDatum(attempts + 1);
    }
    ExecStoreVirtualTuple(row);

    TM_FailureData failure;
    pg::UpdatedIndexes indexes = pg::UpdatedIndexes::none;
    TM_Result result =
        pg::update_row(table, &found->tts_tid, row, command, snapshot, false, &failure, &indexes);
    // A lock of this transaction's own (a SELECT ... FOR UPDATE before the take) holds the take
    // back no more than it holds back the statement's FOR UPDATE.
    if (result == TM_BeingModified && TransactionIdIsCurrentTransactionId(failure.xmax))
        result = pg::update_row(table, &found->tts_tid, row, command, snapshot, true, &failure,
                                &indexes);
    switch (result) {
        case TM_Ok:
            break;
        case TM_BeingModified:
            return LeaseOutcome::left;
        case TM_Updated:
        case TM_Deleted:
            pg::refuse_change_after_snapshot(result);
            return LeaseOutcome::left;
        default:
            elog(ERROR, "unexpected result %d leasing an outgoing message", (int)result);
    }
    if (indexes != pg::UpdatedIndexes::none) {
        pg::IndexWriter writer = pg::open_index_writer(table, command, false);
        pg::insert_updated_index_tuples(writer.target, row, writer.estate, indexes);
        pg::close_index_writer(writer);
    }
    return dies ? LeaseOutcome::made_dead : LeaseOutcome::leased;
}

// A value of the row handed back whole: the tuplestore outlives the buffers of this scan.
Datum whole(Datum value) {
    auto* pointer = reinterpret_cast<varlena*>(DatumGetPointer(value));
    return VARATT_IS_EXTERNAL(pointer) ? PointerGetDatum(detoast_external_attr(pointer)) : value;
}

void append_leased(Tuplestorestate* rows, TupleDesc row_shape, TupleTableSlot* row) {
    Message leased = read_message(row);
    const OutboxColumn returned[] = {id_column,           destination_column, key_column,
                                     headers_column,      payload_column,     attempts_column,
                                     payload_bytes_column};
    constexpr int count = sizeof(returned) / sizeof(returned[0]);
    Datum values[count];
    bool nulls[count];
    for (int i = 0; i < count; i++) {
        OutboxColumn column = returned[i];
        nulls[i] = leased.null(column);
        bool varlena_column = column != id_column && column != attempts_column;
        values[i] = nulls[i] || !varlena_column ? leased.get(column) : whole(leased.get(column));
    }
    tuplestore_putvalues(rows, row_shape, values, nulls);
}

}  // namespace

bool direct_take_possible(TakeTables* tables) {
    // A permission hook (sepgsql, pgaudit) must see the statement.
    if (IsInParallelMode() || ExecutorCheckPerms_hook != nullptr) return false;
    const TakeTarget* found = take_target();
    if (!OidIsValid(found->tables.table)) return false;
    Relation table = try_table_open(found->tables.table, RowExclusiveLock);
    if (table == nullptr) return false;
    // Decided with the table locked, which brings the invalidations of what committed meanwhile.
    const TakeTarget* target = take_target();
    if (!target->decided) {
        const TakeTables& named = target->tables;
        bool direct = RelationGetRelid(table) == named.table && outbox_table_as_created(table) &&
                      pg::btree_on(named.undelivered, named.table, undelivered_columns, 1) &&
                      pg::btree_on(named.key_order, named.table, key_order_columns, 3);
        cached_target.decided = true;
        cached_target.direct = direct;
    }
    bool direct = RelationGetRelid(table) == cached_target.tables.table && cached_target.direct;
    if (direct) *tables = cached_target.tables;
    table_close(table, NoLock);
    return direct;
}

void take_directly(const TakeTables& tables, const TakeRequest& request, Tuplestorestate* rows,
                   TupleDesc row_shape) {
    Relation table = table_open(tables.table, RowExclusiveLock);
    // As the statement's plan checks: a publication of the table's updates needs its identity.
    CheckCmdReplicaIdentity(table, CMD_UPDATE);
    Relation undelivered = index_open(tables.undelivered, AccessShareLock);
    Relation key_order = index_open(tables.key_order, AccessShareLock);
    // A snapshot taken after the scan floor moved, as the statement's would be.
    PushActiveSnapshot(GetTransactionSnapshot());
    Snapshot snapshot = GetActiveSnapshot();
    CommandId command = GetCurrentCommandId(true);
    Datum not_before =
        DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(request.now),
                            IntervalPGetDatum(request.lease));
    DestinationFilter filter = destination_filter(
        request.destinations,
        TupleDescAttr(RelationGetDescr(table), destination_column)->attcollation);

    ScanKeyData from_floor;
    ScanKeyInit(&from_floor, 1, BTGreaterEqualStrategyNumber, F_INT8GE,
                Int64GetDatum(request.scan_floor));
    IndexScanDesc scan = pg::begin_index_scan(table, undelivered, snapshot, 1);
    index_rescan(scan, &from_floor, 1, nullptr, 0);
    KeyProbe probe = {key_order, pg::begin_index_scan(table, key_order, snapshot, 2),
                      table_slot_create(table, nullptr)};
    TupleTableSlot* found = table_slot_create(table, nullptr);
    TupleTableSlot* row = MakeSingleTupleTableSlot(RelationGetDescr(table), &TTSOpsVirtual);

    int taken = 0;
    while (taken < request.max_messages && index_getnext_slot(scan, ForwardScanDirection, found)) {
        CHECK_FOR_INTERRUPTS();
        Message candidate = read_message(found);
        if (!candidate.null(dead_at_column) ||
            DatumGetTimestampTz(candidate.get(not_before_column)) > request.now ||
            !wanted(filter, candidate.get(destination_column)) || written_here(found))
            continue;
        if (!candidate.null(key_column) && key_held_back(probe, candidate, request.now)) continue;
        LeaseOutcome outcome = lease(table, found, row, request, not_before, command, snapshot);
        if (outcome == LeaseOutcome::left) continue;
        taken++;
        if (outcome == LeaseOutcome::leased) append_leased(rows, row_shape, row);
    }

    ExecDropSingleTupleTableSlot(row);
    ExecDropSingleTupleTableSlot(found);
    ExecDropSingleTupleTableSlot(probe.other);
    index_endscan(probe.scan);
    index_endscan(scan);
    PopActiveSnapshot();
    // As after the statement: what follows in the transaction sees the leases.
    CommandCounterIncrement();
    index_close(key_order, AccessShareLock);
    index_close(undelivered, AccessShareLock);
    table_close(table, NoLock);
}
