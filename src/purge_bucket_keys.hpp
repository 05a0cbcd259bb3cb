// A bucket of one consumer holding more expired markers than a batch may delete (a burst: a
// backlog drained with claim_batch, a replay): the purge reads the keys of its expired markers
// once, with one scan of the bucket, in key order, and deletes them batch by batch through the
// primary key, a range of keys at a time (or key by key where the consumer has many other markers
// among them). Reading the bucket again for each batch would walk every marker the earlier batches
// deleted there: their index entries stay until VACUUM, and no scan may even mark them dead while
// the deleting transaction is open, so a burst of N markers would cost about N * N / batch (1.1).
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/tuptable.h"
#include "utils/tuplestore.h"
}

#include <cstdint>

struct BucketKeys {
    MemoryContext context;  // null: no bucket is open
    Tuplestorestate* keys;
    TupleTableSlot* slot;
    int16 consumer_id;
    int32 bucket;
    std::uint8_t last_offset;  // the bucket's markers up to this second are the expired ones
    bool walk_key_ranges;      // else the keys are probed one by one
};

// Reads the keys of the consumer's markers of `bucket` up to second `last_offset` (as the store's
// owner), into memory under `parent` that outlives the purge's commits (a temporary file beyond
// work_mem).
void open_bucket_keys(BucketKeys* open, MemoryContext parent, int16 consumer_id, int32 bucket,
                      std::uint8_t last_offset);

// Deletes the markers of up to `limit` of the next keys, with their details, those that still
// carry the bucket's expired time (a marker forgotten and claimed again since keeps its new one).
// Counts them in *deleted; true when no key is left.
bool delete_next_bucket_keys(BucketKeys* open, int64 limit, int64* deleted);

void close_bucket_keys(BucketKeys* open);
