// See marker_store_1_0.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "storage/lmgr.h"
}

#include "pg/spi.hpp"
#include "store/marker_store_1_0.hpp"
#include "store/marker_table.hpp"

namespace {

// 1.0's table holds the keys as text, compared byte by byte.
MarkerStatement insert_statement = {
    .sql =
        "INSERT INTO inbox.messages (consumer, message_id) VALUES ($1, $2) "
        "ON CONFLICT (consumer, message_id) DO NOTHING",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

MarkerStatement delete_statement = {
    .sql =
        "DELETE FROM inbox.messages WHERE consumer OPERATOR(pg_catalog.=) $1 COLLATE "
        "pg_catalog.\"C\" AND message_id OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    .nargs = 2,
    .argtypes = {TEXTOID, TEXTOID},
    .plan = nullptr};

bool change_marker(MarkerStatement* statement, text* consumer, text* message_id) {
    Datum values[2] = {PointerGetDatum(consumer), PointerGetDatum(message_id)};
    pg::spi_connect();
    execute_as_store_owner(statement, values);
    bool changed = SPI_processed > 0;
    SPI_finish();
    return changed;
}

}  // namespace

bool markers_still_at_1_0() {
    const MarkerStore* store = marker_store();
    if (store->layout != MarkerLayout::version_1_0) return false;
    LockRelationOid(store->markers, RowExclusiveLock);
    return marker_store()->layout == MarkerLayout::version_1_0;
}

bool insert_marker_1_0(text* consumer, text* message_id) {
    return change_marker(&insert_statement, consumer, message_id);
}

bool delete_marker_1_0(text* consumer, text* message_id) {
    return change_marker(&delete_statement, consumer, message_id);
}
