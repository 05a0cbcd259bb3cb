// See table_shape.hpp.
extern "C" {
#include "postgres.h"
#include "access/tupdesc.h"
#include "catalog/pg_attribute.h"
}

#include <cstring>

#include "pg/table_shape.hpp"

namespace pg {

bool columns_as_created(TupleDesc columns, const char* const names[], const Oid types[],
                        int count) {
    if (columns->natts != count) return false;
    if (columns->constr != nullptr &&
        (columns->constr->num_check > 0 || columns->constr->has_generated_stored))
        return false;
    for (int i = 0; i < count; i++) {
        Form_pg_attribute column = TupleDescAttr(columns, i);
        if (column->attisdropped || column->atttypid != types[i] || column->attidentity != '\0' ||
            column->attgenerated != '\0' || strcmp(NameStr(column->attname), names[i]) != 0)
            return false;
    }
    return true;
}

}  // namespace pg
