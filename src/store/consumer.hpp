// A registered consumer, as the registry (consumer_registry.hpp) finds it and a registration
// (consumer_registration.hpp) makes it: what its markers and its failed attempts need.
#pragma once

extern "C" {
#include "postgres.h"
}

struct Consumer {
    int16 id;
    int32 max_attempts;   // 0: no limit
    Oid owner;            // InvalidOid: open to every role that may call the functions, unless
    bool owner_missing;   // the registry names an owner no role of this cluster has (a restore
                          // without that role): then superusers only
    NameData owner_name;  // that missing owner's name, for the error that says so
    text* name;           // as the caller gave it: what its failed attempts are known by
};
