extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "marker_store.hpp"
#include "message_key.hpp"

namespace {

// Argument `argno` as text, or the contract's error for a NULL, empty or over-long key. `what`
// names the argument in the message ("consumer", "message_id").
text* require_message_key(FunctionCallInfo fcinfo, int argno, const char* what,
                          std::size_t max_bytes) {
    if (PG_ARGISNULL(argno))
        ereport(ERROR,
                (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", what),
                 errhint("Every message needs a consumer name and a message id.")));

    text* key = PG_GETARG_TEXT_PP(argno);
    std::size_t length = VARSIZE_ANY_EXHDR(key);
    switch (inbox::check_key_length(length, max_bytes)) {
        case inbox::KeyProblem::empty:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s must not be empty", what)));
            break;
        case inbox::KeyProblem::too_long:
            ereport(ERROR,
                    (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                     errmsg("%s is %zu bytes long, the limit is %zu", what, length, max_bytes),
                     errhint("Use a shorter identifier, or a hash of it.")));
            break;
        case inbox::KeyProblem::none:
            break;
    }
    return key;
}

}  // namespace

MarkerKey require_marker_key(FunctionCallInfo fcinfo) {
    MarkerKey key;
    key.consumer = require_message_key(fcinfo, 0, "consumer", inbox::max_consumer_bytes);
    key.message_id = require_message_key(fcinfo, 1, "message_id", inbox::max_message_id_bytes);
    return key;
}
