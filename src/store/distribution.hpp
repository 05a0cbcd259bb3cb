// Where the marker store lives: on this node only, or distributed by Citus (docs/citus.md).
// Citus stays optional: its catalogs are read through SPI, and only in a database
// where the extension citus is installed; the library is never linked with it.
#pragma once

extern "C" {
#include "postgres.h"
}

enum class StoreDistribution {
    local,              // plain tables of this node
    citus_coordinator,  // Citus tables, and this node is the coordinator
    citus_worker_node,  // Citus tables, and this node is a worker (its queries reach the shards)
};

// How the tables of the store are placed. With Citus they must be placed together: the
// markers (and their details, co-located with them) distributed, the consumer registry a
// reference table, so that every node reads the same consumer ids; anything else is an error
// that says what is wrong, before a claim could write a marker under a node's own id. `registry`
// is InvalidOid in the 1.0 layout, whose one table is checked alone; `details` also while the
// update to 1.1 runs.
StoreDistribution read_store_distribution(Oid markers, Oid details, Oid registry);

// The catalog table whose relcache invalidation announces that this node joined or left a
// Citus cluster (its group changed); InvalidOid without Citus.
Oid citus_local_group_table();
