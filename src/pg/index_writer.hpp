// The executor's state for the index entries of a row written without a statement
// (ExecInsertIndexTuples): a new row, or the new version of an updated one that could not stay on
// its page (no HOT update).
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/execnodes.h"
#include "utils/relcache.h"
}

namespace pg {

struct IndexWriter {
    EState* estate;
    ResultRelInfo* target;
};

// The table's indexes opened for entries written by `command` under the active snapshot;
// speculative: for an insert with ON CONFLICT (the arbiters' speculative entries).
IndexWriter open_index_writer(Relation table, CommandId command, bool speculative);
void close_index_writer(IndexWriter writer);

}  // namespace pg
