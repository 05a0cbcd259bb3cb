// The pairs of a jsonb object read where they are stored: the keys first, then their values in
// the same order (keys sorted by length, then bytes, as jsonb keeps them), each value as
// JsonbIteratorNext would give it, without the iterator's state and its allocations.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/jsonb.h"
}

namespace pg {

struct JsonbObjectReader {
    const JsonbContainer* object;
    int pair_count;
    const char* data;  // the entries' bytes
    int next;          // the next entry: keys are 0 .. pair_count - 1, their values the next ones
    uint32 offset;     // where the next entry's bytes start, after the entries' headers
};

// A reader at the first key of `object`, which is an object (JsonContainerIsObject).
JsonbObjectReader read_object(const JsonbContainer* object);

// The next key's bytes (not terminated); called pair_count times before next_value.
void next_key(JsonbObjectReader* reader, const char** name, int* length);

// The next value: a scalar, or jbvBinary for an array or object.
void next_value(JsonbObjectReader* reader, JsonbValue* value);

}  // namespace pg
