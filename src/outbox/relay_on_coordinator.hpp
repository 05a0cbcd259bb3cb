// The relay's functions refuse to run on a worker node of a Citus cluster that distributes the
// markers (see relay_on_coordinator.cpp): an error (55000) naming `function` and saying where to
// connect instead.
#pragma once

void require_relay_on_coordinator(const char* function);
