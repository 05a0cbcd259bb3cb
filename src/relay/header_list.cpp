#include "relay/header_list.hpp"

#include <stdexcept>

namespace inbox_relay {
namespace {

// Reads one netstring at the front of rest and removes it from rest.
std::string next_netstring(std::string_view& rest) {
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos || colon == 0) {
        throw std::invalid_argument("malformed header list");
    }
    size_t length = 0;
    for (char digit : rest.substr(0, colon)) {
        if (digit < '0' || digit > '9') {
            throw std::invalid_argument("malformed header list");
        }
        length = length * 10 + static_cast<size_t>(digit - '0');
    }
    if (rest.size() < colon + 1 + length + 1 || rest[colon + 1 + length] != ',') {
        throw std::invalid_argument("malformed header list");
    }
    std::string text(rest.substr(colon + 1, length));
    rest.remove_prefix(colon + 1 + length + 1);
    return text;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_header_list(std::string_view list) {
    std::vector<std::pair<std::string, std::string>> headers;
    while (!list.empty()) {
        std::string name = next_netstring(list);
        if (list.empty()) {
            throw std::invalid_argument("malformed header list");
        }
        headers.emplace_back(std::move(name), next_netstring(list));
    }
    return headers;
}

}  // namespace inbox_relay
