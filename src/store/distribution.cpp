// See distribution.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"
}

#include "pg/spi.hpp"
#include "store/distribution.hpp"

namespace {

// What Citus's catalogs say about the store's tables: a distribution method ('h' hash, 'n' none)
// and, for a table without one, its replication model ('t': a reference table).
struct CitusPlacement {
    bool citus_table;
    char method;
    int32 colocation;
    char replication;
};

struct StorePlacement {
    int32 local_group;  // 0 on the coordinator
    CitusPlacement markers, details, registry;
};

// One row: the node's group, then (method, co-location group, replication model) per table.
constexpr const char* placement_query =
    "SELECT (SELECT g.groupid FROM pg_catalog.pg_dist_local_group g), "
    "m.partmethod, m.colocationid, m.repmodel, d.partmethod, d.colocationid, d.repmodel, "
    "r.partmethod, r.colocationid, r.repmodel "
    "FROM (VALUES (1)) AS one(x) "
    "LEFT JOIN pg_catalog.pg_dist_partition m ON m.logicalrelid OPERATOR(pg_catalog.=) $1 "
    "LEFT JOIN pg_catalog.pg_dist_partition d ON d.logicalrelid OPERATOR(pg_catalog.=) $2 "
    "LEFT JOIN pg_catalog.pg_dist_partition r ON r.logicalrelid OPERATOR(pg_catalog.=) $3";

CitusPlacement placement_at(HeapTuple row, TupleDesc columns, int first_column) {
    bool isnull = true;
    CitusPlacement placement = {false, 0, 0, 0};
    Datum method = SPI_getbinval(row, columns, first_column, &isnull);
    if (isnull) return placement;
    placement.citus_table = true;
    placement.method = DatumGetChar(method);
    placement.colocation = DatumGetInt32(SPI_getbinval(row, columns, first_column + 1, &isnull));
    placement.replication = DatumGetChar(SPI_getbinval(row, columns, first_column + 2, &isnull));
    return placement;
}

StorePlacement read_placement(Oid markers, Oid details, Oid registry) {
    Oid argtypes[3] = {OIDOID, OIDOID, OIDOID};
    Datum values[3] = {ObjectIdGetDatum(markers), ObjectIdGetDatum(details),
                       ObjectIdGetDatum(registry)};
    pg::spi_connect();
    int rc = SPI_execute_with_args(placement_query, 3, argtypes, values, nullptr, true, 1);
    if (rc != SPI_OK_SELECT || SPI_processed != 1)
        elog(ERROR, "could not read Citus's placement of the inbox tables: %s",
             SPI_result_code_string(rc));
    HeapTuple row = SPI_tuptable->vals[0];
    TupleDesc columns = SPI_tuptable->tupdesc;
    bool isnull = true;
    Datum group = SPI_getbinval(row, columns, 1, &isnull);
    StorePlacement placement = {isnull ? 0 : DatumGetInt32(group), placement_at(row, columns, 2),
                                placement_at(row, columns, 5), placement_at(row, columns, 8)};
    SPI_finish();
    return placement;
}

[[noreturn]] void report_partial_distribution(const char* detail) {
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("the tables of inbox are not distributed together"), errdetail("%s", detail),
             errhint("Let inbox distribute them on the coordinator: SELECT inbox.distribute();")));
}

// The one placement served on Citus (or none of the tables a Citus table): markers and details
// hash-distributed in one co-location group, the registry a reference table.
void require_supported_placement(const StorePlacement& placement, Oid details, Oid registry) {
    const CitusPlacement& markers = placement.markers;
    if (!OidIsValid(registry)) return;  // 1.0's one table: whatever Citus accepted for it
    bool any =
        markers.citus_table || placement.details.citus_table || placement.registry.citus_table;
    if (!any) return;
    if (!markers.citus_table || markers.method != 'h')
        report_partial_distribution("inbox.markers is not a hash-distributed table.");
    if (OidIsValid(details) && (!placement.details.citus_table || placement.details.method != 'h' ||
                                placement.details.colocation != markers.colocation))
        report_partial_distribution(
            "inbox.marker_details is not distributed in the co-location group of inbox.markers.");
    if (!placement.registry.citus_table || placement.registry.method != 'n' ||
        placement.registry.replication != 't')
        report_partial_distribution("inbox.consumer_registry is not a reference table.");
}

}  // namespace

StoreDistribution read_store_distribution(Oid markers, Oid details, Oid registry) {
    if (!OidIsValid(get_extension_oid("citus", true))) return StoreDistribution::local;
    StorePlacement placement = read_placement(markers, details, registry);
    require_supported_placement(placement, details, registry);
    if (!placement.markers.citus_table) return StoreDistribution::local;
    return placement.local_group == 0 ? StoreDistribution::citus_coordinator
                                      : StoreDistribution::citus_worker_node;
}

Oid citus_local_group_table() {
    return get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
}
