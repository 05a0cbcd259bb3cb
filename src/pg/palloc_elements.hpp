// Arrays in the current memory context, typed: `pg::palloc_elements<Datum>(count)` (PostgreSQL 15
// has palloc_array only in its latest minor releases). Never of zero bytes (palloc refuses none,
// but an empty batch should not need a special case).
#pragma once

extern "C" {
#include "postgres.h"
}

namespace pg {

template <typename Element>
Element* palloc_elements(int count) {
    // Element may be a pointer: an array of pointers is meant.
    return static_cast<Element*>(
        palloc(sizeof(Element) * Max(count, 1)));  // NOLINT(bugprone-sizeof-expression)
}

}  // namespace pg
