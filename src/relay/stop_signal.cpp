#include "relay/stop_signal.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <system_error>

namespace inbox_relay {
namespace {

volatile sig_atomic_t stop_flag = 0;
int wake_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
    int saved_errno = errno;
    stop_flag = 1;
    char byte = 1;
    // Full or not, the pipe is readable: a failed write loses nothing.
    [[maybe_unused]] ssize_t written = write(wake_pipe[1], &byte, 1);
    errno = saved_errno;
}

}  // namespace

void install_stop_signal() {
    if (pipe2(wake_pipe, O_NONBLOCK | O_CLOEXEC) != 0) {
        throw std::system_error(errno, std::generic_category(), "pipe");
    }
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() {
    return stop_flag != 0;
}

void wait_readable_or_stop(int fd, double timeout_seconds) {
    if (stop_requested()) {
        return;
    }
    pollfd watched[2] = {{.fd = wake_pipe[0], .events = POLLIN, .revents = 0},
                         {.fd = fd, .events = POLLIN, .revents = 0}};
    // An interrupted poll (EINTR) returns early; the caller looks at the outbox again.
    poll(watched, fd >= 0 ? 2 : 1, static_cast<int>(timeout_seconds * 1000));
}

}  // namespace inbox_relay
