// See drop_statement.hpp.
extern "C" {
#include "postgres.h"
#include "commands/event_trigger.h"
#include "nodes/parsenodes.h"
}

#include <cstring>

#include "drop/drop_statement.hpp"

namespace {

bool names_inbox(List* names) {
    ListCell* cell;
    foreach (cell, names) {
        if (strcmp(strVal(lfirst(cell)), "inbox") == 0) return true;
    }
    return false;
}

}  // namespace

Node* triggering_statement(FunctionCallInfo fcinfo, const char* function) {
    if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s is an event trigger function", function)));
    return reinterpret_cast<EventTriggerData*>(fcinfo->context)->parsetree;
}

bool drops_inbox(Node* statement) {
    if (statement == nullptr || !IsA(statement, DropStmt)) return false;
    auto* drop = castNode(DropStmt, statement);
    if (drop->removeType == OBJECT_EXTENSION) return names_inbox(drop->objects);
    if (drop->removeType == OBJECT_SCHEMA && drop->behavior == DROP_CASCADE)
        return names_inbox(drop->objects);
    return false;
}
