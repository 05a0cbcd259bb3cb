// One relcache callback for the whole extension. PostgreSQL has room for ten in a backend, for
// every library it loads together (MAX_RELCACHE_CALLBACKS; Citus takes some): the extension
// registers one, which tells each of its caches.
#pragma once

extern "C" {
#include "postgres.h"
}

namespace pg {

// `forget` is called at every relcache invalidation from now on, with the relation's oid
// (InvalidOid: every relation). Call it before the cache is first filled; a function given
// again is kept once.
void forget_on_relcache_invalidation(void (*forget)(Oid relid));

}  // namespace pg
