// A marker's identity as callers give it, consumer and message id: validated against the
// contract's limits (message_key.hpp), with its errors (22004 NULL, 22023 empty, 22001 too long).
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

text* require_consumer_name(FunctionCallInfo fcinfo, int argno);
text* require_message_id(FunctionCallInfo fcinfo, int argno);
// A message id given inside another argument (an array, a JSON batch).
text* require_message_id_value(text* message_id);
// The stream of a position (stream/claim_position.cpp): a partition of a log, an aggregate;
// validated as a message id is.
text* require_stream_name(FunctionCallInfo fcinfo, int argno);
