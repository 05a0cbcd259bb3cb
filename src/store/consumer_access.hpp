// Who may act for a consumer: one with an owner (1.2) serves the members of that role and
// superusers only; one without serves every role that may call the functions, as in 1.1.
// Acting is claiming, applying, receiving, completing, forgetting and configuring.
#pragma once

extern "C" {
#include "postgres.h"
#include "access/htup.h"
#include "access/tupdesc.h"
}

#include "store/consumer.hpp"

// The consumer's owner from column `column` of a registry row: a role's OID (1.2's regrole) or
// its name (1.3), which is looked up now. A name no role has leaves the consumer to superusers.
void read_consumer_owner(HeapTuple row, TupleDesc columns, int column, Consumer* consumer);

// Whether the current user has the privileges of the consumer's owner (superusers have them).
bool may_act_for(const Consumer& consumer);

// An error (42501, "permission denied for consumer") unless may_act_for.
void require_consumer_access(const Consumer& consumer);

// An error unless `role` is a role whose privileges the current user has: the owner it may give a
// consumer, as PostgreSQL's ALTER ... OWNER TO asks (42501; 42704 for no role).
void require_new_owner(text* consumer, Oid role);
