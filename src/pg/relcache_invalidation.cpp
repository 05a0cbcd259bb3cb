// See relcache_invalidation.hpp.
#include "pg/relcache_invalidation.hpp"

extern "C" {
#include "utils/inval.h"
}

namespace pg {
namespace {

// Room for the extension's caches of relations (eight today), with some to spare.
constexpr int max_forgetters = 16;
void (*forgetters[max_forgetters])(Oid relid);
int forgetter_count = 0;

void forget_in_every_cache(Datum, Oid relid) {
    for (int i = 0; i < forgetter_count; i++) forgetters[i](relid);
}

}  // namespace

void forget_on_relcache_invalidation(void (*forget)(Oid relid)) {
    for (int i = 0; i < forgetter_count; i++) {
        if (forgetters[i] == forget) return;
    }
    if (forgetter_count == max_forgetters)
        elog(ERROR, "inbox: more than %d caches of relations", max_forgetters);
    if (forgetter_count == 0) CacheRegisterRelcacheCallback(forget_in_every_cache, (Datum)0);
    forgetters[forgetter_count++] = forget;
}

}  // namespace pg
