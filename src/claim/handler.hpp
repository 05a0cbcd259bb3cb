// The handler of inbox.apply and inbox.apply_batch: resolved once per call site (kept in
// fn_extra), checked like a direct call of the function would be, and called with the payload.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

struct Handler;

// The handler `fn` for the call site of fcinfo: an existing plain function taking (jsonb) or no
// argument, not returning a set or a pseudo-type other than void and record, that the caller may
// execute. Errors (42883, 42501) otherwise.
Handler* handler_for_call_site(FunctionCallInfo fcinfo, Oid fn);

// 22004 when the payload is NULL and the handler takes it but is STRICT (it would silently not
// run while the marker says "done").
void require_runnable(const Handler* handler, bool payload_is_null);

void run_handler(Handler* handler, Datum payload, bool payload_is_null);
