// See consumer_access.hpp. Membership is PostgreSQL's own (has_privs_of_role, cached per backend
// and invalidated with pg_auth_members): a GRANT or REVOKE of the owner role takes effect as it
// does for a table's owner. A consumer whose owner role was dropped serves superusers only.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
}

#include "store/consumer_access.hpp"

bool may_act_for(const Consumer& consumer) {
    return !OidIsValid(consumer.owner) || has_privs_of_role(GetUserId(), consumer.owner);
}

void require_consumer_access(const Consumer& consumer) {
    if (may_act_for(consumer)) return;
    const char* owner = GetUserNameFromId(consumer.owner, true);
    if (owner != nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied for consumer \"%s\"", text_to_cstring(consumer.name)),
                 errdetail("Only members of role \"%s\", which owns the consumer, may act for it.",
                           owner)));
    ereport(ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("permission denied for consumer \"%s\"", text_to_cstring(consumer.name)),
             errdetail("Its owner, the role with OID %u, no longer exists: only superusers may "
                       "act for it.",
                       consumer.owner),
             errhint("A superuser gives it an owner with inbox.configure_consumer.")));
}

void require_new_owner(text* consumer, Oid role) {
    if (!OidIsValid(role) || !SearchSysCacheExists1(AUTHOID, ObjectIdGetDatum(role)))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("the owner of consumer \"%s\" must be an existing role",
                               text_to_cstring(consumer)),
                        errhint("NULL leaves the consumer without an owner.")));
    if (!has_privs_of_role(GetUserId(), role))
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to make role \"%s\" the owner of consumer \"%s\"",
                               GetUserNameFromId(role, false), text_to_cstring(consumer)),
                        errdetail("Only members of a role may give it a consumer.")));
}
