// The relay's output: lines on stdout, flushed one by one, for journald or a terminal.
#pragma once

#include <string>

namespace inbox_relay {

void print_line(const std::string& line);

}  // namespace inbox_relay
