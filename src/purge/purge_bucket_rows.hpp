// A bucket of one consumer holding more expired markers than a batch may delete (a burst: a
// backlog drained with claim_batch, a replay): the purge reads which rows its expired markers
// are with one scan of the bucket, and deletes them batch by batch by those rows. Reading the
// bucket again for each batch would walk every marker the earlier batches deleted there: their
// index entries stay until VACUUM, and no scan may even mark them dead while the deleting
// transaction is open, so a burst of N markers would cost about N * N / batch (1.1).
//
// A row is its ctid in a plain table of this node, its key where a ctid does not name one row
// (a partitioned table, Citus shards). Either way a batch deletes only the markers that still
// carry the bucket's expired time: a ctid reused since, or a marker forgotten and claimed again,
// is left alone.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/tuptable.h"
#include "utils/tuplestore.h"
}

#include <cstdint>

struct BucketRows {
    MemoryContext context;  // null: no bucket is open
    Tuplestorestate* rows;
    TupleTableSlot* slot;
    int16 consumer_id;
    int32 bucket;
    std::uint8_t last_offset;  // the bucket's markers up to this second are the expired ones
    bool by_ctid;              // else by key
    bool has_details;          // some of the bucket's markers keep details (marker_details)
    int64 read_limit;          // rows read at a time; 0: all
    bool read_all;             // the last read found no more rows than it held
};

// Reads the rows of the consumer's markers of `bucket` up to second `last_offset` (as the
// store's owner), into memory under `parent` that outlives the purge's commits (a temporary file
// beyond work_mem). `read_limit` rows at most (0: all): a purge that may stop before the bucket
// is gone reads only what it can delete, and reads the rest again once that is deleted.
void open_bucket_rows(BucketRows* open, MemoryContext parent, int16 consumer_id, int32 bucket,
                      std::uint8_t last_offset, int64 read_limit);

// Deletes the markers of up to `limit` of the next rows, with their details. Counts them in
// *deleted; true when the bucket has no expired marker left to read.
bool delete_next_bucket_rows(BucketRows* open, int64 limit, int64* deleted);

void close_bucket_rows(BucketRows* open);
