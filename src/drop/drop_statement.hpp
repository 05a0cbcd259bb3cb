// What the extension's event triggers at ddl_command_start look for: a statement that drops the
// extension inbox.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "nodes/nodes.h"
}

// The statement that fired the event trigger calling `function` (its SQL name, for the error
// when it is called otherwise).
Node* triggering_statement(FunctionCallInfo fcinfo, const char* function);

// DROP EXTENSION inbox, or DROP SCHEMA inbox CASCADE (without CASCADE it fails anyway).
bool drops_inbox(Node* statement);
