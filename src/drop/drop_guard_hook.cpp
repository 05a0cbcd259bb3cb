// The drop guard's object-access hook (drop_guard.hpp). Whatever statement drops the extension
// (DROP OWNED BY its owner, DROP EXTENSION of one it depends on with CASCADE, DROP SCHEMA under
// any spelling), PostgreSQL deletes its markers table as one of its members, and calls this hook
// just before, while the table and its rows are still there. Statements are not parsed: the
// deletion itself is the event.
//
// In place whenever the library is loaded in the backend: in every session with
// shared_preload_libraries; without it, once any function of the extension has run in the
// session, which DROP EXTENSION, DROP SCHEMA and DROP OWNED ensure through the event trigger
// inbox_guard_drop before they drop anything.
extern "C" {
#include "postgres.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

#include <cstring>

#include "drop/drop_guard.hpp"
#include "pg/compat.hpp"
#include "settings.hpp"

namespace {

object_access_hook_type previous_object_access_hook = nullptr;

// The markers table the extension created (1.1 and later), as a member of the extension inbox.
// A member is deleted only with its extension, or by the extension's own scripts.
bool is_inbox_markers_table(Oid relation) {
    if (get_rel_relkind(relation) != RELKIND_RELATION) return false;
    Oid schema = get_namespace_oid("inbox", true);
    if (!OidIsValid(schema) || get_rel_namespace(relation) != schema) return false;
    char* name = get_rel_name(relation);
    if (name == nullptr || strcmp(name, "markers") != 0) return false;
    Oid extension = get_extension_oid("inbox", true);
    if (!OidIsValid(extension) || getExtensionOfObject(RelationRelationId, relation) != extension)
        return false;
    // An update script of the extension may replace its tables.
    return !(creating_extension && CurrentExtensionObject == extension);
}

// Whether the table has a row this transaction sees: the first one found ends the scan.
bool has_visible_row(Oid relation) {
    Relation table = table_open(relation, AccessShareLock);
    Snapshot snapshot = RegisterSnapshot(GetLatestSnapshot());
    TableScanDesc scan = pg::begin_table_scan(table, snapshot);
    TupleTableSlot* slot = table_slot_create(table, nullptr);
    bool found = table_scan_getnextslot(scan, ForwardScanDirection, slot);
    ExecDropSingleTupleTableSlot(slot);
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(table, AccessShareLock);
    return found;
}

void guard_markers_table(ObjectAccessType access, Oid class_id, Oid object_id, int sub_id,
                         void* arg) {
    if (previous_object_access_hook != nullptr)
        previous_object_access_hook(access, class_id, object_id, sub_id, arg);
    if (access != OAT_DROP || class_id != RelationRelationId || sub_id != 0) return;
    if (allow_drop_with_markers || !is_inbox_markers_table(object_id)) return;
    if (has_visible_row(object_id)) refuse_drop_with_markers(-1);
}

}  // namespace

void install_drop_guard_hook() {
    previous_object_access_hook = object_access_hook;
    object_access_hook = guard_markers_table;
}
