// See marker_arguments.hpp.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "pg/arguments.hpp"
#include "pg/compat.hpp"
#include "store/marker_arguments.hpp"
#include "store/message_key.hpp"

namespace {

// `part` of the identity as given for argument `what` ("consumer", "message_id"), or the
// contract's error for an empty or over-long one.
text* require_identity_length(text* part, const char* what, std::size_t max_bytes) {
    std::size_t length = VARSIZE_ANY_EXHDR(part);
    switch (inbox::check_identity_length(length, max_bytes)) {
        case inbox::LengthProblem::empty:
            ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                            errmsg("%s must not be empty", what)));
            break;
        case inbox::LengthProblem::too_long:
            ereport(ERROR,
                    (errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
                     errmsg("%s is %zu bytes long, the limit is %zu", what, length, max_bytes),
                     errhint("Use a shorter identifier, or a hash of it.")));
            break;
        case inbox::LengthProblem::none:
            break;
    }
    return part;
}

text* require_identity_part(FunctionCallInfo fcinfo, int argno, const char* what,
                            std::size_t max_bytes) {
    pg::require_argument(fcinfo, argno, what,
                         "Every message needs a consumer name and a message id.");
    return require_identity_length(PG_GETARG_TEXT_PP(argno), what, max_bytes);
}

}  // namespace

text* require_consumer_name(FunctionCallInfo fcinfo, int argno) {
    return require_identity_part(fcinfo, argno, "consumer", inbox::max_consumer_bytes);
}

text* require_message_id(FunctionCallInfo fcinfo, int argno) {
    return require_identity_part(fcinfo, argno, "message_id", inbox::max_message_id_bytes);
}

text* require_message_id_value(text* message_id) {
    return require_identity_length(message_id, "message_id", inbox::max_message_id_bytes);
}

text* require_stream_name(FunctionCallInfo fcinfo, int argno) {
    pg::require_argument(fcinfo, argno, "stream",
                         "A stream names a partition of a log or an aggregate's events, such as "
                         "'orders/3' or 'account-42'.");
    return require_identity_length(PG_GETARG_TEXT_PP(argno), "stream", inbox::max_message_id_bytes);
}
