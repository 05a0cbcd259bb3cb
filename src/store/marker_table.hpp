// The marker store as claim, forget and the purge reach it: through SQL statements with kept
// plans (so that a partitioned or Citus-distributed store works the same as a local one), run as
// the store's owner; a single marker of a plain local store is inserted without a statement
// (marker_insert.hpp). C-style: this is the hot path.
//
// Two layouts are served, so that a database keeps working between the installation of this
// library and ALTER EXTENSION inbox UPDATE:
//  - 1.1: the compact table inbox.markers, with consumer ids from inbox.consumer_registry;
//  - 1.0: the table inbox.messages (consumer, message_id, processed_at), whose markers claim,
//    apply and forget change through marker_store_1_0.hpp.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/spi.h"
#include "storage/lockdefs.h"
}

#include "store/distribution.hpp"

enum class MarkerLayout { compact, version_1_0 };

// How the registry keeps a consumer's owner: 1.1 has no owner; 1.2 keeps the role's OID (a
// regrole); 1.3 keeps the role's name, which a restore without the role still loads.
enum class OwnerColumn { none, role_oid, role_name };

struct MarkerStore {
    MarkerLayout layout;
    Oid markers;   // inbox.markers, or 1.0's inbox.messages
    Oid details;   // inbox.marker_details; InvalidOid in the 1.0 layout (and during the update)
    Oid registry;  // inbox.consumer_registry; InvalidOid in the 1.0 layout
    OwnerColumn owner_column;
    Oid owner;  // of the markers' table: the statements run as this role
    StoreDistribution distribution;
};

// The store of the current database, looked up once and dropped by any relcache invalidation
// of its tables (ALTER TABLE ... OWNER, DROP EXTENSION, the update to 1.1, a change of their
// Citus distribution). An error when the extension's tables are missing, or when Citus
// distributes them only in part (distribution.hpp).
const MarkerStore* marker_store();

// A table or sequence of the extension's schema by name, never through the search_path, locked
// in `mode`; InvalidOid when there is none.
Oid find_inbox_relation(const char* name, LOCKMODE mode);

// Locks the tables a purge batch reads and deletes from (1.1: the registry, the markers and their
// details; 1.0: its table), in the order the extension created them, which DROP EXTENSION
// follows: a batch and a DROP EXTENSION wait for each other, never deadlock. False when the
// extension is gone. Never resolved through the search_path.
bool lock_store_for_purge();

// Locks the delivered outgoing messages' table (inbox.outbox_delivered, 1.3) for a purge batch,
// after the store (lock_store_for_purge): false when the database has none (an extension not
// updated to 1.3).
bool lock_outbox_for_purge();

// The caller's identity, set aside while the store's owner acts.
struct CallerIdentity {
    Oid user;
    int security_context;
};

// Makes the store's owner the current user, inside a security-restricted operation: callers
// need EXECUTE on our functions, never privileges on the tables, and a trigger or an index
// expression on them cannot change the caller's session. return_to_caller() puts the caller
// back before any of its code runs again; on error, transaction abort does.
CallerIdentity become_store_owner(const MarkerStore* store);
void return_to_caller(CallerIdentity caller);

// A statement on the store, prepared on first use and kept for the backend's life; the plan
// cache re-plans it when a table changes.
struct MarkerStatement {
    const char* sql;
    int nargs;
    Oid argtypes[6];
    SPIPlanPtr plan;
};

// The statement's plan, prepared on first use.
SPIPlanPtr prepared_plan(MarkerStatement* statement);

// Runs the statement in the caller's SPI connection as the owner of the store
// (become_store_owner). Returns the SPI result code.
int execute_as_store_owner(MarkerStatement* statement, const Datum* values,
                           const char* nulls = nullptr);

// The same for a statement that reads, with a snapshot taken now (pg::execute_plan_latest): the
// registry as every committed transaction left it.
int read_latest_as_store_owner(MarkerStatement* statement, const Datum* values);

// The owner of the streams' positions (inbox.stream_positions), which a DBA may have given to
// another role than the store's; InvalidOid in a database not at 1.3 yet.
Oid stream_positions_owner();

// read_latest_as_store_owner as `owner`, for a statement on a table of the extension's that is
// not the store's.
int read_latest_as(Oid owner, MarkerStatement* statement, const Datum* values);
