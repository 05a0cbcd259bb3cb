// DELETE through the view inbox.messages, written as deletes of the stored rows: the markers and
// their details whose view columns satisfy the statement's condition, with each view column
// replaced by its expression over the table's own columns (as PostgreSQL rewrites a DELETE
// through a view over one table). Set-based, and a statement Citus plans: Citus refuses, or
// sends to a worker unchanged, a write through a view over its tables, which the view's
// INSTEAD OF trigger would need. The trigger still serves INSERT, UPDATE, and any DELETE this
// does not take (with USING, WITH, WHERE CURRENT OF, or a volatile condition).
#pragma once

// Installs the rewrite (a post_parse_analyze_hook): from _PG_init, preloaded or not.
void install_messages_delete_rewrite();
