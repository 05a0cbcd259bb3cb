// Registering a consumer in a transaction of its own, so that the first claim of a new consumer
// never makes other first claims of it wait until its own transaction ends (which may take as
// long as its handler). A short-lived background worker inserts the registry row and commits;
// the claim waits only for that. Dynamic background workers need no preload. On a worker node
// of a Citus cluster, the coordinator registers it, since its sequence hands out the ids.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "consumer_registry.hpp"

// Registers `consumer` (a validated key) in a worker's transaction, or finds it registered since
// this transaction's snapshot, and returns it as the registry holds it (its id and settings; on
// a Citus worker node, the coordinator registers it and only its id is known);
// false when no worker could be started (max_worker_processes), or when this transaction holds
// a lock on the registry that the worker would wait for: the caller registers it in its own
// transaction then. An error when the worker could not register it.
bool register_in_own_transaction(text* consumer, Consumer* found);

extern "C" {
PGDLLEXPORT void inbox_registrar_main(Datum segment);
}
