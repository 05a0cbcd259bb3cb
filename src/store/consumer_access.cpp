// See consumer_access.hpp. Membership is PostgreSQL's own (has_privs_of_role, cached per backend
// and invalidated with pg_auth_members): a GRANT or REVOKE of the owner role takes effect as it
// does for a table's owner, and a NOINHERIT member acts for the consumer only after SET ROLE, as
// for a table. A consumer whose owner role was dropped, or never restored, serves superusers only.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
}

#include "store/consumer_access.hpp"

void read_consumer_owner(HeapTuple row, TupleDesc columns, int column, Consumer* consumer) {
    consumer->owner = InvalidOid;
    consumer->owner_missing = false;
    bool isnull = true;
    Datum owner = SPI_getbinval(row, columns, column, &isnull);
    if (isnull) return;
    if (SPI_gettypeid(columns, column) != NAMEOID) {
        consumer->owner = DatumGetObjectId(owner);
        return;
    }
    const char* name = NameStr(*DatumGetName(owner));
    consumer->owner = get_role_oid(name, true);
    if (OidIsValid(consumer->owner)) return;
    consumer->owner_missing = true;
    namestrcpy(&consumer->owner_name, name);
}

bool may_act_for(const Consumer& consumer) {
    if (consumer.owner_missing) return superuser();
    return !OidIsValid(consumer.owner) || has_privs_of_role(GetUserId(), consumer.owner);
}

void require_consumer_access(const Consumer& consumer) {
    if (may_act_for(consumer)) return;
    const char* consumer_name = text_to_cstring(consumer.name);
    if (consumer.owner_missing)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied for consumer \"%s\"", consumer_name),
                 errdetail("Its owner, role \"%s\", does not exist (a restore without that role?): "
                           "only superusers may act for it.",
                           NameStr(consumer.owner_name)),
                 errhint("Create the role, or have a superuser give the consumer another owner "
                         "with inbox.configure_consumer.")));
    const char* owner = GetUserNameFromId(consumer.owner, true);
    if (owner != nullptr)
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                 errmsg("permission denied for consumer \"%s\"", consumer_name),
                 errdetail("Only members of role \"%s\", which owns the consumer, may act for it.",
                           owner)));
    ereport(ERROR,
            (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
             errmsg("permission denied for consumer \"%s\"", consumer_name),
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
