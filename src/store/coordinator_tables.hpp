// The tables of the coordinator: on Citus the outbox (inbox.outbox_messages) and the streams'
// positions (inbox.stream_positions) stay local tables of the coordinator (docs/citus.md). A
// worker node has copies of its own, which no relay reads and no claim on the coordinator sees:
// a message sent there would never be published, a position claimed there would be claimed again
// through the coordinator. So what reaches those tables refuses to run on a worker node of a
// cluster that distributes the markers, before it touches them.
#pragma once

extern "C" {
#include "postgres.h"
}

// An error (55000) on a worker node of a distributed store: `function` reaches `table`, a local
// table of the coordinator; `hint` says how to reach it there instead.
void require_coordinator_table(const char* function, const char* table, const char* hint);
