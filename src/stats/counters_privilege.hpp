// Who may read the counters is decided in one place: the EXECUTE privilege on
// inbox.stats_counters(), which the grants of 1.0 to 1.2 and grant_access(..., 'monitor') give.
// The functions that inbox.stats calls from 1.3 on (inbox.stats_counters_1_3(),
// inbox.outbox_counts()) are executable by PUBLIC and ask for that privilege themselves (as
// inbox.worker_status_1_2() does): a grant made before the update, or after it by the documented
// statement, still serves the view.
#pragma once

// Raises 42501 unless the current user may execute inbox.stats_counters().
void check_counters_privilege();
