// See payload_fingerprint.hpp.
extern "C" {
#include "postgres.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "lib/stringinfo.h"
#include "utils/numeric.h"
}

#include "claim/payload_fingerprint.hpp"

namespace {

// Lengths in a fixed byte order, so that a fingerprint does not depend on the machine that
// computed it (a dump restored elsewhere compares the same).
void append_length(StringInfo form, std::size_t length) {
    auto value = static_cast<uint32>(length);
    char bytes[4] = {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
                     static_cast<char>(value >> 8), static_cast<char>(value)};
    appendBinaryStringInfo(form, bytes, sizeof(bytes));
}

void append_text(StringInfo form, char kind, const char* text, std::size_t length) {
    appendStringInfoChar(form, kind);
    append_length(form, length);
    appendBinaryStringInfo(form, text, static_cast<int>(length));
}

void append_scalar(StringInfo form, const JsonbValue& value) {
    switch (value.type) {
        case jbvNull:
            appendStringInfoChar(form, 'z');
            break;
        case jbvBool:
            appendStringInfoChar(form, value.val.boolean ? 't' : 'f');
            break;
        case jbvString:
            append_text(form, 's', value.val.string.val, value.val.string.len);
            break;
        case jbvNumeric: {
            // Without insignificant zeros: 1.0, 1.00 and 1 are written alike.
            char* digits = numeric_normalize(value.val.numeric);
            append_text(form, 'n', digits, strlen(digits));
            pfree(digits);
            break;
        }
        default:
            elog(ERROR, "unexpected jsonb value type %d in a payload", value.type);
    }
}

// The canonical form: every token of the payload in jsonb's order.
void write_canonical_form(Jsonb* payload, StringInfo form) {
    // A scalar payload is stored as a one-element array: only its element is written.
    bool scalar = JB_ROOT_IS_SCALAR(payload);
    JsonbIterator* iterator = JsonbIteratorInit(&payload->root);
    JsonbValue value;
    JsonbIteratorToken token;
    while ((token = JsonbIteratorNext(&iterator, &value, false)) != WJB_DONE) {
        switch (token) {
            case WJB_BEGIN_ARRAY:
                if (!scalar) appendStringInfoChar(form, '[');
                break;
            case WJB_END_ARRAY:
                if (!scalar) appendStringInfoChar(form, ']');
                break;
            case WJB_BEGIN_OBJECT:
                appendStringInfoChar(form, '{');
                break;
            case WJB_END_OBJECT:
                appendStringInfoChar(form, '}');
                break;
            case WJB_KEY:
                append_text(form, 'k', value.val.string.val, value.val.string.len);
                break;
            case WJB_VALUE:
            case WJB_ELEM:
                append_scalar(form, value);
                break;
            case WJB_DONE:
                break;
        }
    }
}

}  // namespace

int64 payload_fingerprint(Jsonb* payload) {
    StringInfoData form;
    initStringInfo(&form);
    write_canonical_form(payload, &form);

    uint8 digest[PG_SHA256_DIGEST_LENGTH];
    pg_cryptohash_ctx* context = pg_cryptohash_create(PG_SHA256);
    if (context == nullptr || pg_cryptohash_init(context) < 0 ||
        pg_cryptohash_update(context, reinterpret_cast<const uint8*>(form.data),
                             static_cast<std::size_t>(form.len)) < 0 ||
        pg_cryptohash_final(context, digest, sizeof(digest)) < 0)
        elog(ERROR, "could not compute the SHA-256 of a payload: %s", pg_cryptohash_error(context));
    pg_cryptohash_free(context);
    pfree(form.data);

    uint64 fingerprint = 0;
    for (int i = 0; i < 8; i++) fingerprint = (fingerprint << 8) | digest[i];
    return static_cast<int64>(fingerprint);
}
