#include "relay/output.hpp"

#include <cstdio>

namespace inbox_relay {

void print_line(const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

}  // namespace inbox_relay
