// See index_writer.hpp.
extern "C" {
#include "postgres.h"
#include "executor/executor.h"
#include "utils/snapmgr.h"
}

#include "pg/index_writer.hpp"

namespace pg {

IndexWriter open_index_writer(Relation table, CommandId command, bool speculative) {
    EState* estate = CreateExecutorState();
    estate->es_output_cid = command;
    // The statement's snapshot, as the executor sets it: the conflict check of PostgreSQL 19
    // reads the conflicting row with it.
    estate->es_snapshot = GetActiveSnapshot();
    ResultRelInfo* target = makeNode(ResultRelInfo);
    // No range table: nothing below reads it (it serves permissions, triggers and the messages
    // of CHECK constraints, none of which applies here).
    InitResultRelInfo(target, table, 0, nullptr, 0);
    ExecOpenIndices(target, speculative);
    return {estate, target};
}

void close_index_writer(IndexWriter writer) {
    ExecCloseIndices(writer.target);
    FreeExecutorState(writer.estate);
}

}  // namespace pg
