// The marker table inbox.messages: recording a processed message and forgetting it.
// C-style: these run on the hot path inside PostgreSQL's error handling (SPI, executor).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "executor/spi.h"
}

// Inserts the marker in the caller's transaction. True: first delivery, do the work. False: a
// committed marker exists. Waits for a concurrent, uncommitted copy to commit or roll back.
bool claim_marker(text* consumer, text* message_id);

// Deletes one marker; true when there was one.
bool forget_marker(text* consumer, text* message_id);

// A statement on inbox.messages, prepared on first use and kept for the backend's life; the plan
// cache re-plans it when the table changes.
struct MarkerStatement {
    const char* sql;
    int nargs;
    Oid argtypes[3];
    SPIPlanPtr plan;
};

// Runs the statement in the caller's SPI connection as the owner of inbox.messages (callers need
// EXECUTE on our functions, never privileges on the table). Returns the SPI result code.
int execute_as_marker_owner(MarkerStatement* statement, Datum* values);

// Both keys of a marker-taking function, arguments 0 and 1, validated.
struct MarkerKey {
    text* consumer;
    text* message_id;
};
MarkerKey require_marker_key(FunctionCallInfo fcinfo);
