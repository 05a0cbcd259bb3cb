// See details_visibility.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
}

#include "stats/details_visibility.hpp"
#include "store/consumer_access.hpp"
#include "store/consumer_registry.hpp"
#include "store/marker_table.hpp"

DetailsVisibility details_visibility() {
    const MarkerStore* store = marker_store();
    return DetailsVisibility{.every_consumer =
                                 store->owner_column == OwnerColumn::none ||
                                 has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS)};
}

bool details_visible(const DetailsVisibility& visibility, text* consumer) {
    if (visibility.every_consumer) return true;
    Consumer found;
    return !find_consumer(consumer, Registration::none, &found) || may_act_for(found);
}
