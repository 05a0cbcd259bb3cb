// The indexes of one table as ExecOpenIndices opens them for an insert, with what it builds for
// each at every call kept across calls: the IndexInfo (BuildIndexInfo reads the index's relcache
// entry and copies its predicate and expressions), a partial index's predicate and an expression
// index's expressions compiled (ExecInsertIndexTuples compiles them at each statement's first
// row, so a one-row insert pays it every time). A third of what opening the outbox's three
// indexes cost a send. The compiled expressions are kept as the type cache keeps a domain's CHECK
// expressions: built without a parent plan, evaluated in each call's own context.
//
// Forgotten at an invalidation of the table (an index added or dropped) or of one of its indexes
// (CREATE INDEX CONCURRENTLY marks it ready for inserts so), and rebuilt at the next open; the
// indexes are locked and opened at every call, as ExecOpenIndices does.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/execnodes.h"
#include "utils/palloc.h"
}

namespace pg {

struct KeptIndexes {
    bool valid;
    Oid table;
    int count;
    Oid* oids;             // in `memory`
    IndexInfo** infos;     // in `memory`; nullptr until the indexes were first opened
    MemoryContext memory;  // under CacheMemoryContext; nullptr until first built
};

constexpr KeptIndexes no_kept_indexes = {false, InvalidOid, 0, nullptr, nullptr, nullptr};

// ExecOpenIndices(target, false), from `kept`. ExecCloseIndices closes them.
void open_kept_indexes(KeptIndexes* kept, ResultRelInfo* target);

// For a relcache invalidation of relid (InvalidOid: of every relation).
void forget_kept_indexes(KeptIndexes* kept, Oid relid);

}  // namespace pg
