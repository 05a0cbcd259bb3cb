// inbox.upsert_versioned and inbox.insert_once: natural idempotency for any table, no marker.
//
// They run with the caller's privileges (no SECURITY DEFINER, no user switch), so GRANTs and
// row-level security apply exactly as to the same statement written by hand. The arguments are
// checked here; the write itself is a kept plan (upsert_plan.hpp), fed values converted by
// each column type's own input function.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "storage/lmgr.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
}

#include "pg/arguments.hpp"
#include "pg/jsonb_object.hpp"
#include "upsert/upsert_plan.hpp"

namespace {

// Locks the table as the write will (so that no ALTER TABLE runs under us, and pending
// invalidations arrive before the cache is consulted), then reads its facts.
TargetTable* open_target_table(Oid relid) {
    LockRelationOid(relid, RowExclusiveLock);
    return lookup_target_table(relid);
}

AttrNumber version_column(TargetTable* table, const char* name) {
    // remembered after the places of the row's keys
    bool as_remembered;
    AttrNumber version = column_named(table, name, static_cast<int>(strlen(name)),
                                      table->attribute_count, &as_remembered);
    if (version == InvalidAttrNumber)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                        errmsg("version column \"%s\" of relation \"%s\" does not exist", name,
                               get_rel_name(table->relid)),
                        errhint("Name the version column in the third argument.")));
    if (is_key_column(table, version))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("version column \"%s\" is part of the primary key of \"%s\"", name,
                               get_rel_name(table->relid)),
                        errhint("The version orders the states of one row; it cannot be part of "
                                "the row's identity.")));
    return version;
}

[[noreturn]] void reject_missing_value(const TargetTable* table, const char* argument,
                                       AttrNumber attnum, const char* role, const char* hint) {
    ereport(ERROR,
            (errcode(ERRCODE_NOT_NULL_VIOLATION),
             errmsg("%s has no value for %s column \"%s\" of relation \"%s\"", argument, role,
                    get_attname(table->relid, attnum, false), get_rel_name(table->relid)),
             errhint("%s", hint)));
}

// What a json row writes: its columns, and each one's value at values[attnum - 1] (jbvNull for
// a column it does not carry).
struct IncomingRow {
    IncomingColumns columns;
    JsonbValue* values;
};
static_assert(jbvNull == 0, "zeroed values are nulls");

// Every key must name a column; the key columns (and the version, when there is one) must be
// present and not null.
IncomingRow read_row(TargetTable* table, Jsonb* row, const char* argument, AttrNumber version) {
    if (!JB_ROOT_IS_OBJECT(row))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must be a JSON object", argument),
                        errhint("Pass one object whose keys are column names.")));

    auto* attnums = static_cast<AttrNumber*>(palloc(table->attribute_count * sizeof(AttrNumber)));
    IncomingRow incoming{
        {0, attnums, true},
        static_cast<JsonbValue*>(palloc0(table->attribute_count * sizeof(JsonbValue)))};
    pg::JsonbObjectReader reader = pg::read_object(&row->root);
    for (int i = 0; i < reader.pair_count; i++) {
        const char* name;
        int length;
        pg::next_key(&reader, &name, &length);
        bool as_remembered;
        AttrNumber attnum = column_named(table, name, length, i, &as_remembered);
        if (attnum == InvalidAttrNumber)
            ereport(ERROR, (errcode(ERRCODE_UNDEFINED_COLUMN),
                            errmsg("column \"%.*s\" of relation \"%s\" does not exist", length,
                                   name, get_rel_name(table->relid)),
                            errhint("Every key of %s must be a column of the table.", argument)));
        // (no two keys of a jsonb object are equal: at most attribute_count columns)
        attnums[i] = attnum;
        incoming.columns.as_remembered = incoming.columns.as_remembered && as_remembered;
    }
    incoming.columns.count = reader.pair_count;
    for (int i = 0; i < reader.pair_count; i++)
        pg::next_value(&reader, &incoming.values[attnums[i] - 1]);

    auto has_value = [&](AttrNumber column) { return incoming.values[column - 1].type != jbvNull; };
    for (int i = 0; i < table->key_count; i++) {
        AttrNumber key = table->key_columns[i];
        if (!has_value(key))
            reject_missing_value(table, argument, key, "primary key",
                                 "The primary key identifies the row: every key column needs a "
                                 "value.");
    }
    if (version != InvalidAttrNumber && !has_value(version))
        reject_missing_value(table, argument, version, "version",
                             "A state message must carry its version; inbox.insert_once takes "
                             "rows without one.");
    return incoming;
}

}  // namespace

extern "C" {

PG_FUNCTION_INFO_V1(inbox_upsert_versioned);
PGDLLEXPORT Datum inbox_upsert_versioned(PG_FUNCTION_ARGS) {
    pg::require_argument(fcinfo, 0, "target");
    pg::require_argument(fcinfo, 1, "state");
    pg::require_argument(fcinfo, 2, "version_column");
    Jsonb* state = PG_GETARG_JSONB_P(1);
    TargetTable* table = open_target_table(PG_GETARG_OID(0));
    AttrNumber version = version_column(table, NameStr(*PG_GETARG_NAME(2)));
    IncomingRow incoming = read_row(table, state, "state", version);
    CachedStatement* statement =
        lookup_statement(table, NaturalWrite::upsert_versioned, version, incoming.columns);
    PG_RETURN_BOOL(execute_statement(statement, PointerGetDatum(state), incoming.values));
}

PG_FUNCTION_INFO_V1(inbox_insert_once);
PGDLLEXPORT Datum inbox_insert_once(PG_FUNCTION_ARGS) {
    pg::require_argument(fcinfo, 0, "target");
    pg::require_argument(fcinfo, 1, "row");
    Jsonb* row = PG_GETARG_JSONB_P(1);
    TargetTable* table = open_target_table(PG_GETARG_OID(0));
    IncomingRow incoming = read_row(table, row, "row", InvalidAttrNumber);
    CachedStatement* statement =
        lookup_statement(table, NaturalWrite::insert_once, InvalidAttrNumber, incoming.columns);
    PG_RETURN_BOOL(execute_statement(statement, PointerGetDatum(row), incoming.values));
}
}
