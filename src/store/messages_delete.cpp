// See messages_delete.hpp.
extern "C" {
#include "postgres.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/primnodes.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "pg/compat.hpp"
#include "store/messages_delete.hpp"

namespace {

post_parse_analyze_hook_type previous_post_parse_analyze = nullptr;

// The stored rows of the markers and of their details that a DELETE through the view takes, one
// statement each. Both tables start with the same four columns (time_bucket, consumer_id,
// time_offset, message_key), and a marker's details carry its time, so the view's columns
// computed from either table are those of the marker: one condition selects both. In each
// statement the table is range table entry 1 and the registry entry 2.
constexpr const char* stored_rows_delete =
    "WITH details AS (DELETE FROM inbox.marker_details m USING inbox.consumer_registry r "
    "WHERE r.id OPERATOR(pg_catalog.=) m.consumer_id) "
    "DELETE FROM inbox.markers m USING inbox.consumer_registry r "
    "WHERE r.id OPERATOR(pg_catalog.=) m.consumer_id";

constexpr int stored_table_rti = 1;
constexpr int registry_rti = 2;

// The extension's view inbox.messages, or InvalidOid: a database without the extension, or at
// 1.0 (where inbox.messages is the markers' table).
Oid messages_view(Oid relation) {
    Oid inbox = get_extension_oid("inbox", true);
    if (!OidIsValid(inbox)) return InvalidOid;
    Oid schema = get_namespace_oid("inbox", true);
    if (!OidIsValid(schema) || relation != get_relname_relid("messages", schema)) return InvalidOid;
    return getExtensionOfObject(RelationRelationId, relation) == inbox ? relation : InvalidOid;
}

// The statements a DELETE through the view can become: one target, no USING, no WITH (a WITH
// could read the view, or write the markers, beside it), no WHERE CURRENT OF a cursor over it.
bool is_plain_delete_of_messages(Query* query) {
    if (query->commandType != CMD_DELETE || query->resultRelation <= 0) return false;
    RangeTblEntry* target = rt_fetch(query->resultRelation, query->rtable);
    if (target->rtekind != RTE_RELATION || target->relkind != RELKIND_VIEW) return false;
    // (the target of a DELETE is also the one item of its FROM list, without USING)
    List* from = query->jointree->fromlist;
    if (list_length(from) != 1 || !IsA(linitial(from), RangeTblRef) ||
        linitial_node(RangeTblRef, from)->rtindex != query->resultRelation || query->cteList != NIL)
        return false;
    // The condition selects the markers and their details apart: a volatile one (random())
    // could take a marker and leave its details, or the reverse.
    Node* condition = query->jointree->quals;
    if (condition != nullptr &&
        (IsA(condition, CurrentOfExpr) || contain_volatile_functions(condition)))
        return false;
    return OidIsValid(messages_view(target->relid));
}

// The view's columns as expressions over the stored table (entry 1) and the registry (entry 2),
// from the view's own definition: one source for what a column means.
List* view_columns_over_stored_rows(Oid view, Oid markers, Oid registry) {
    Relation relation = table_open(view, AccessShareLock);
    Query* definition = get_view_query(relation);
    table_close(relation, NoLock);
    int markers_rti = 0;
    int registry_rti_in_view = 0;
    int rti = 0;
    ListCell* cell = nullptr;
    foreach (cell, definition->rtable) {
        ++rti;
        RangeTblEntry* entry = lfirst_node(RangeTblEntry, cell);
        if (entry->rtekind != RTE_RELATION) continue;
        if (entry->relid == markers) markers_rti = rti;
        if (entry->relid == registry) registry_rti_in_view = rti;
    }
    if (markers_rti == 0 || registry_rti_in_view == 0)
        elog(ERROR, "inbox.messages does not read inbox.markers and inbox.consumer_registry");
    // Out of the way first, so that renumbering one entry cannot meet the other.
    constexpr int apart = 1000;
    List* columns = static_cast<List*>(copyObjectImpl(definition->targetList));
    OffsetVarNodes(reinterpret_cast<Node*>(columns), apart, 0);
    ChangeVarNodes(reinterpret_cast<Node*>(columns), markers_rti + apart, stored_table_rti, 0);
    ChangeVarNodes(reinterpret_cast<Node*>(columns), registry_rti_in_view + apart, registry_rti, 0);
    return columns;
}

Oid relation_of(Query* statement, int rti) {
    return rt_fetch(rti, statement->rtable)->relid;
}

// One of the two statements with the user's condition, written over its own stored table.
void restrict_to(Query* statement, RangeTblEntry* view_entry, int view_rti, List* columns,
                 Node* condition, bool condition_has_sublinks) {
    if (condition == nullptr) return;
    bool has_sublinks = false;
    Node* over_stored = pg::replace_vars(static_cast<Node*>(copyObjectImpl(condition)), view_rti,
                                         view_entry, columns, stored_table_rti, &has_sublinks);
    statement->jointree->quals = make_and_qual(statement->jointree->quals, over_stored);
    statement->hasSubLinks = statement->hasSubLinks || has_sublinks || condition_has_sublinks;
}

// The rewritten statement no longer names the view, whose DELETE privilege the executor would
// check: checked here, with PostgreSQL's error. (The statement still needs the privileges on the
// tables, which only their owner has: no role gains anything if a cached plan runs later under
// another role.)
void require_delete_privilege(Oid view) {
    AclResult allowed = pg_class_aclcheck(view, GetUserId(), ACL_DELETE);
    if (allowed != ACLCHECK_OK) aclcheck_error(allowed, OBJECT_VIEW, get_rel_name(view));
}

void rewrite_delete_of_messages(Query* query) {
    RawStmt* raw = linitial_node(RawStmt, raw_parser(stored_rows_delete, RAW_PARSE_DEFAULT));
    Query* markers_delete = parse_analyze_fixedparams(raw, stored_rows_delete, nullptr, 0, nullptr);
    Query* details_delete =
        castNode(Query, linitial_node(CommonTableExpr, markers_delete->cteList)->ctequery);
    Oid markers = relation_of(markers_delete, stored_table_rti);
    Oid registry = relation_of(markers_delete, registry_rti);

    int view_rti = query->resultRelation;
    RangeTblEntry* view_entry = rt_fetch(view_rti, query->rtable);
    require_delete_privilege(view_entry->relid);
    List* columns = view_columns_over_stored_rows(view_entry->relid, markers, registry);
    Node* condition = query->jointree->quals;
    restrict_to(details_delete, view_entry, view_rti, columns, condition, query->hasSubLinks);
    restrict_to(markers_delete, view_entry, view_rti, columns, condition, query->hasSubLinks);
    if (query->returningList != NIL) {
        bool has_sublinks = false;
        markers_delete->returningList = reinterpret_cast<List*>(
            pg::replace_vars(reinterpret_cast<Node*>(query->returningList), view_rti, view_entry,
                             columns, stored_table_rti, &has_sublinks));
        markers_delete->hasSubLinks =
            markers_delete->hasSubLinks || has_sublinks || query->hasSubLinks;
    }

    // The statement as the client wrote it, for pg_stat_statements and the logs.
    markers_delete->queryId = query->queryId;
    markers_delete->stmt_location = query->stmt_location;
    markers_delete->stmt_len = query->stmt_len;
    *query = *markers_delete;
}

void rewrite_messages_writes(ParseState* parse_state, Query* query,
                             pg::PostParseJumbleState jumble_state) {
    if (previous_post_parse_analyze != nullptr)
        previous_post_parse_analyze(parse_state, query, jumble_state);
    Query* statement = query;
    // EXPLAIN analyses its statement with it, and passes only itself to this hook.
    if (query->commandType == CMD_UTILITY && query->utilityStmt != nullptr &&
        IsA(query->utilityStmt, ExplainStmt))
        statement = castNode(Query, castNode(ExplainStmt, query->utilityStmt)->query);
    if (is_plain_delete_of_messages(statement)) rewrite_delete_of_messages(statement);
}

}  // namespace

void install_messages_delete_rewrite() {
    previous_post_parse_analyze = post_parse_analyze_hook;
    post_parse_analyze_hook = rewrite_messages_writes;
}
