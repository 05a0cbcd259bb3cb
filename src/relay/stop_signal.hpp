// SIGTERM and SIGINT ask the relay to stop after the batch in flight. The handler only sets a
// flag and writes to a pipe (the self-pipe trick), so that every wait of the relay (for a
// notification, a backoff delay) wakes at once instead of at its timeout.
#pragma once

namespace inbox_relay {

// Installs the handlers (and ignores SIGPIPE: a peer that closed its socket is an error to
// report, not a reason to die).
void install_stop_signal();

bool stop_requested();

// Waits until fd is readable (fd < 0: no descriptor), a stop is requested, or the timeout passes.
void wait_readable_or_stop(int fd, double timeout_seconds);

}  // namespace inbox_relay
