// The fingerprint that inbox.receive keeps of a payload, so that a later copy whose payload
// differs is answered payload_mismatch.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/jsonb.h"
}

// The first 8 bytes of the SHA-256 of the payload's canonical form, as a big-endian int64. The
// canonical form is jsonb's: object keys sorted and unique, whitespace gone, numbers by value
// (1.0 and 1 are one payload); each token is written with its kind and its length, so that no
// two different payloads have the same form. PostgreSQL's own jsonb hash is not used: it
// combines its parts by XOR and rotation, so that [[1],2] and [[1,2]], {} and [], or two arrays
// of 33 elements that differ at positions 1 and 33 alike, hash the same.
int64 payload_fingerprint(Jsonb* payload);
