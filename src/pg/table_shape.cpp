// See table_shape.hpp.
extern "C" {
#include "postgres.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "nodes/pg_list.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include <cstring>

#include "pg/compat.hpp"
#include "pg/table_shape.hpp"

namespace pg {

bool plain_table(Relation table) {
    Form_pg_class form = table->rd_rel;
    return form->relkind == RELKIND_RELATION && !form->relispartition && !form->relrowsecurity &&
           table->trigdesc == nullptr && table->rd_rules == nullptr;
}

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

Oid sole_unique_key(Relation table, const AttrNumber key[], int count) {
    Oid primary_key = primary_key_index(table);
    if (!OidIsValid(primary_key)) return InvalidOid;
    List* indexes = RelationGetIndexList(table);
    bool sole = true;
    ListCell* cell;
    foreach (cell, indexes) {
        HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(cell)));
        if (!HeapTupleIsValid(tuple))
            elog(ERROR, "cache lookup failed for index %u", lfirst_oid(cell));
        auto* index = (Form_pg_index)GETSTRUCT(tuple);
        if (index->indexrelid == primary_key) {
            sole = sole && index->indisvalid && index->indimmediate && index->indnkeyatts == count;
            for (int i = 0; sole && i < count; i++) sole = index->indkey.values[i] == key[i];
        } else {
            sole = sole && !index->indisunique && !index->indisexclusion;
        }
        ReleaseSysCache(tuple);
    }
    list_free(indexes);
    return sole ? primary_key : InvalidOid;
}

bool btree_on(Oid index_oid, Oid table, const AttrNumber columns[], int count) {
    if (!OidIsValid(index_oid)) return false;
    Relation index = index_open(index_oid, AccessShareLock);
    Form_pg_index form = index->rd_index;
    bool as_created = form->indrelid == table && form->indisvalid && form->indisready &&
                      index->rd_rel->relam == BTREE_AM_OID && form->indnatts == count &&
                      RelationGetIndexExpressions(index) == NIL;
    for (int i = 0; as_created && i < count; i++) as_created = form->indkey.values[i] == columns[i];
    index_close(index, AccessShareLock);
    return as_created;
}

}  // namespace pg
