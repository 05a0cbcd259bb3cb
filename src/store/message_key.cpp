// See message_key.hpp: the stored form of a message id, made and read back. Pure C++.
#include "store/message_key.hpp"

#include <cstring>

namespace inbox {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

int lowercase_hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool is_hyphen_position(std::size_t i) {
    return i == 8 || i == 13 || i == 18 || i == 23;
}

// The 16 bytes of a canonical UUID text, or false when the text is not one.
bool parse_canonical_uuid(const char* text, std::size_t length, std::uint8_t* out) {
    if (length != uuid_text_length) return false;
    std::size_t byte = 0;
    for (std::size_t i = 0; i < length;) {
        if (is_hyphen_position(i)) {
            if (text[i] != '-') return false;
            i++;
            continue;
        }
        int high = lowercase_hex_value(text[i]);
        int low = lowercase_hex_value(text[i + 1]);
        if (high < 0 || low < 0) return false;
        out[byte++] = static_cast<std::uint8_t>(high << 4 | low);
        i += 2;
    }
    return true;
}

}  // namespace

std::size_t encode_message_id(const char* id, std::size_t length, std::uint8_t* out) {
    if (parse_canonical_uuid(id, length, out)) return uuid_bytes;
    std::memcpy(out, id, length);
    if (length != uuid_bytes) return length;
    out[uuid_bytes] = 0;
    return uuid_bytes + 1;
}

std::size_t decoded_message_id_length(const std::uint8_t* key, std::size_t length) {
    if (length == uuid_bytes) return uuid_text_length;
    if (length == uuid_bytes + 1 && key[uuid_bytes] == 0) return uuid_bytes;
    return length;
}

void decode_message_id(const std::uint8_t* key, std::size_t length, char* out) {
    if (length != uuid_bytes) {
        std::memcpy(out, key, decoded_message_id_length(key, length));
        return;
    }
    std::size_t position = 0;
    for (std::size_t byte = 0; byte < uuid_bytes; byte++) {
        if (is_hyphen_position(position)) out[position++] = '-';
        out[position++] = hex_digits[key[byte] >> 4];
        out[position++] = hex_digits[key[byte] & 0x0f];
    }
}

}  // namespace inbox
