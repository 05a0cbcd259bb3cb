// See coordinator_tables.hpp.
#include "store/coordinator_tables.hpp"
#include "store/marker_table.hpp"

void require_coordinator_table(const char* function, const char* table, const char* hint) {
    if (marker_store()->distribution != StoreDistribution::citus_worker_node) return;
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("%s cannot run on a Citus worker node", function),
             errdetail("%s is a local table of the coordinator: this node's own copy is read by "
                       "no relay and by no claim on the coordinator.",
                       table),
             errhint("%s", hint)));
}
