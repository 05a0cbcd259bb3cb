#include "relay/uuid_array.hpp"

#include <cstdint>
#include <stdexcept>

namespace inbox_relay {
namespace {

constexpr uint32_t uuid_type_oid = 2950;  // pg_type's fixed oid of uuid
constexpr int uuid_bytes = 16;

void append_int32(std::string& out, uint32_t value) {
    for (int shift = 24; shift >= 0; shift -= 8) {
        out += static_cast<char>((value >> shift) & 0xff);
    }
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void append_uuid(std::string& out, const std::string& id) {
    std::string bytes;
    int high = -1;
    for (char c : id) {
        if (c == '-') {
            continue;
        }
        int value = hex_value(c);
        if (value < 0 || bytes.size() == uuid_bytes) {
            throw std::invalid_argument("'" + id + "' is not a UUID");
        }
        if (high < 0) {
            high = value;
        } else {
            bytes += static_cast<char>(high << 4 | value);
            high = -1;
        }
    }
    if (bytes.size() != uuid_bytes || high >= 0) {
        throw std::invalid_argument("'" + id + "' is not a UUID");
    }
    append_int32(out, uuid_bytes);
    out += bytes;
}

}  // namespace

std::string binary_uuid_array(const std::vector<std::string>& ids) {
    std::string out;
    out.reserve(20 + ids.size() * (4 + uuid_bytes));
    // One dimension, no NULLs, of uuid; its length and lower bound 1 (an empty array: none).
    append_int32(out, ids.empty() ? 0 : 1);
    append_int32(out, 0);
    append_int32(out, uuid_type_oid);
    if (!ids.empty()) {
        append_int32(out, static_cast<uint32_t>(ids.size()));
        append_int32(out, 1);
    }
    for (const std::string& id : ids) {
        append_uuid(out, id);
    }
    return out;
}

}  // namespace inbox_relay
