// What the extension's event triggers at ddl_command_start look for: a statement that drops the
// extension inbox.
#pragma once

extern "C" {
#include "postgres.h"
#include "nodes/nodes.h"
}

// DROP EXTENSION inbox, or DROP SCHEMA inbox CASCADE (without CASCADE it fails anyway).
bool drops_inbox(Node* statement);
