// The claim counters of a Citus cluster, as its coordinator shows them. A claim counts in the
// shared memory of the node that ran it, and Citus runs a delegated function call
// (create_distributed_function) on a worker: the coordinator adds the counters of every worker
// node to its own, and resets theirs with its own. Nothing happens elsewhere (no Citus, a store
// that Citus does not distribute, a worker node).
#pragma once

#include "stats/stats_table.hpp"

// Adds the worker nodes' counters of this database to `snapshot` (read by stats_table_snapshot);
// an error naming the node when one cannot be read.
void add_worker_node_counters(StatsSnapshot* snapshot);

// Zeroes the worker nodes' counters of this database (those that count).
void reset_worker_node_counters();
