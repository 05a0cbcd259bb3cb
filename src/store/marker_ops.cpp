// See marker_ops.hpp.
extern "C" {
#include "postgres.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

#include "pg/compat.hpp"
#include "pg/palloc_elements.hpp"
#include "store/marker_insert.hpp"
#include "store/marker_ops.hpp"
#include "store/marker_table.hpp"
#include "store/marker_time.hpp"

namespace {

// ON CONFLICT DO NOTHING lets the primary key arbitrate: a concurrent uncommitted copy makes the
// insert wait for its transaction; under REPEATABLE READ a conflict with a row the snapshot
// cannot see is a serialization failure, never a wrong answer. The time is a parameter, not a
// column default: nothing is evaluated per insert. The statement serves the tables the direct
// insert does not (marker_insert.hpp).
MarkerStatement insert_statement = {
    .sql =
        "INSERT INTO inbox.markers (time_bucket, consumer_id, time_offset, message_key) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (consumer_id, message_key) DO NOTHING",
    .nargs = 4,
    .argtypes = {INT4OID, INT2OID, CHAROID, BYTEAOID},
    .plan = nullptr};

MarkerStatement delete_statement = {
    .sql =
        "DELETE FROM inbox.markers WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND message_key OPERATOR(pg_catalog.=) $2",
    .nargs = 2,
    .argtypes = {INT2OID, BYTEAOID},
    .plan = nullptr};

MarkerStatement delete_details_statement = {
    .sql =
        "DELETE FROM inbox.marker_details WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND message_key OPERATOR(pg_catalog.=) $2",
    .nargs = 2,
    .argtypes = {INT2OID, BYTEAOID},
    .plan = nullptr};

MarkerStatement read_details_statement = {
    .sql =
        "SELECT fingerprint, result FROM inbox.marker_details "
        "WHERE consumer_id OPERATOR(pg_catalog.=) $1 AND message_key OPERATOR(pg_catalog.=) $2",
    .nargs = 2,
    .argtypes = {INT2OID, BYTEAOID},
    .plan = nullptr};

// Details found for a marker just inserted outlived an earlier marker of the same message
// (deleted by its owner through inbox.messages, say): they are replaced whole.
MarkerStatement keep_fingerprint_statement = {
    .sql =
        "INSERT INTO inbox.marker_details "
        "(time_bucket, consumer_id, time_offset, message_key, fingerprint) "
        "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (consumer_id, message_key) "
        "DO UPDATE SET time_bucket = EXCLUDED.time_bucket, time_offset = EXCLUDED.time_offset, "
        "fingerprint = EXCLUDED.fingerprint, result = NULL",
    .nargs = 5,
    .argtypes = {INT4OID, INT2OID, CHAROID, BYTEAOID, INT8OID},
    .plan = nullptr};

// The details row takes its marker's time, so that the purge takes both together. The marker is
// locked until the caller's transaction ends: a purge (or forget) that deletes it waits for the
// commit and then deletes the details too, or has deleted it first and this finds no marker
// (after waiting for it), never a result left behind without its marker.
MarkerStatement keep_result_statement = {
    .sql =
        "INSERT INTO inbox.marker_details "
        "(time_bucket, consumer_id, time_offset, message_key, result) "
        "SELECT m.time_bucket, m.consumer_id, m.time_offset, m.message_key, $3 "
        "FROM inbox.markers m WHERE m.consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND m.message_key OPERATOR(pg_catalog.=) $2 FOR KEY SHARE OF m "
        "ON CONFLICT (consumer_id, message_key) DO UPDATE SET result = EXCLUDED.result",
    .nargs = 3,
    .argtypes = {INT2OID, BYTEAOID, JSONBOID},
    .plan = nullptr};

inbox::MarkerTime transaction_time() {
    return inbox::marker_time(GetCurrentTransactionStartTimestamp());
}

}  // namespace

void store_message_id(text* message_id, MessageKey* key) {
    std::size_t length =
        inbox::encode_message_id(VARDATA_ANY(message_id), VARSIZE_ANY_EXHDR(message_id),
                                 reinterpret_cast<std::uint8_t*>(VARDATA(key->datum())));
    SET_VARSIZE(key->datum(), VARHDRSZ + length);
}

bool insert_marker(const Consumer& consumer, MessageKey* key) {
    inbox::MarkerTime time = transaction_time();
    Datum values[4] = {Int32GetDatum(time.bucket), Int16GetDatum(consumer.id),
                       CharGetDatum(static_cast<char>(time.offset)), PointerGetDatum(key->datum())};
    DirectInsert direct = insert_marker_directly(values);
    bool inserted = direct == DirectInsert::inserted;
    if (direct == DirectInsert::unsupported) {
        execute_as_store_owner(&insert_statement, values);
        inserted = SPI_processed > 0;
    }
    return inserted;
}

bool remove_marker(const Consumer& consumer, MessageKey* key) {
    Datum values[2] = {Int16GetDatum(consumer.id), PointerGetDatum(key->datum())};
    execute_as_store_owner(&delete_statement, values);
    bool removed = SPI_processed > 0;
    execute_as_store_owner(&delete_details_statement, values);
    return removed;
}

bool read_details(int16 consumer, MessageKey* key, MarkerDetails* details) {
    Datum values[2] = {Int16GetDatum(consumer), PointerGetDatum(key->datum())};
    execute_as_store_owner(&read_details_statement, values);
    *details = MarkerDetails{false, 0, 0};
    if (SPI_processed == 0) return false;
    bool isnull = true;
    Datum fingerprint = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    if (!isnull) {
        details->has_fingerprint = true;
        details->fingerprint = DatumGetInt64(fingerprint);
    }
    Datum result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
    if (!isnull) details->result = SPI_datumTransfer(result, false, -1);
    return true;
}

void keep_fingerprint(int16 consumer, MessageKey* key, int64 fingerprint) {
    inbox::MarkerTime time = transaction_time();
    Datum values[5] = {Int32GetDatum(time.bucket), Int16GetDatum(consumer),
                       CharGetDatum(static_cast<char>(time.offset)), PointerGetDatum(key->datum()),
                       Int64GetDatum(fingerprint)};
    execute_as_store_owner(&keep_fingerprint_statement, values);
}

bool keep_result(int16 consumer, MessageKey* key, Datum result) {
    Datum values[3] = {Int16GetDatum(consumer), PointerGetDatum(key->datum()), result};
    execute_as_store_owner(&keep_result_statement, values);
    return SPI_processed > 0;
}

namespace {

// One statement for a whole batch. The function scan of the array feeds the insert directly,
// so the rows are inserted, and their keys locked, in the array's order (no sort, no join can
// come between; test/isolation/specs/batches.spec deadlocks if they are not). The insert is read
// back through a CTE: Citus counts the rows an INSERT ... SELECT ... RETURNING tried, not those
// it returned, and SPI refuses the difference.
MarkerStatement insert_batch_statement = {
    .sql =
        "WITH inserted AS (INSERT INTO inbox.markers "
        "(time_bucket, consumer_id, time_offset, message_key) "
        "SELECT $1, $2, $3, u.key FROM pg_catalog.unnest($4) AS u(key) "
        "ON CONFLICT (consumer_id, message_key) DO NOTHING RETURNING message_key) "
        "SELECT i.message_key FROM inserted i",
    .nargs = 4,
    .argtypes = {INT4OID, INT2OID, CHAROID, BYTEAARRAYOID},
    .plan = nullptr};

}  // namespace

void withdraw_marker(int16 consumer, MessageKey* key) {
    Datum values[2] = {Int16GetDatum(consumer), PointerGetDatum(key->datum())};
    execute_as_store_owner(&delete_statement, values);
}

void insert_markers(const Consumer& consumer, MessageKey* const* keys, int count, bool* inserted) {
    auto* elements = pg::palloc_elements<Datum>(count);
    for (int i = 0; i < count; i++) {
        elements[i] = PointerGetDatum(keys[i]->datum());
        inserted[i] = false;
    }
    ArrayType* array = construct_array(elements, count, BYTEAOID, -1, false, TYPALIGN_INT);
    inbox::MarkerTime time = transaction_time();
    Datum values[4] = {Int32GetDatum(time.bucket), Int16GetDatum(consumer.id),
                       CharGetDatum(static_cast<char>(time.offset)), PointerGetDatum(array)};
    execute_as_store_owner(&insert_batch_statement, values);
    // The keys are sorted: each returned key is found by binary search.
    for (uint64 row = 0; row < SPI_processed; row++) {
        bool isnull = false;
        bytea* returned = DatumGetByteaPP(
            SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, 1, &isnull));
        int low = 0, high = count - 1;
        while (low <= high) {
            int middle = (low + high) / 2;
            int order = compare_key_bytes(keys[middle]->data(), keys[middle]->length(),
                                          VARDATA_ANY(returned), VARSIZE_ANY_EXHDR(returned));
            if (order == 0) {
                inserted[middle] = true;
                break;
            }
            if (order < 0)
                low = middle + 1;
            else
                high = middle - 1;
        }
    }
}
