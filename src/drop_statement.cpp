// See drop_statement.hpp.
extern "C" {
#include "postgres.h"
#include "nodes/parsenodes.h"
}

#include <cstring>

#include "drop_statement.hpp"

namespace {

bool names_inbox(List* names) {
    ListCell* cell;
    foreach (cell, names) {
        if (strcmp(strVal(lfirst(cell)), "inbox") == 0) return true;
    }
    return false;
}

}  // namespace

bool drops_inbox(Node* statement) {
    if (statement == nullptr || !IsA(statement, DropStmt)) return false;
    auto* drop = castNode(DropStmt, statement);
    if (drop->removeType == OBJECT_EXTENSION) return names_inbox(drop->objects);
    if (drop->removeType == OBJECT_SCHEMA && drop->behavior == DROP_CASCADE)
        return names_inbox(drop->objects);
    return false;
}
