// inbox.claim_position, inbox.claim_positions, inbox.stream_position and inbox.retire_stream: one
// committed position per (consumer, stream) in inbox.stream_positions, moved by the claiming
// transaction, so that the position commits with the work or not at all. A claim locks the stream's
// row before it reads the position: two claims of one stream wait for each other, as two copies of
// a message do, and the second reads what the first committed. Under REPEATABLE READ, a stream
// moved after the snapshot is a serialization failure (40001). A claim writes the table directly
// (direct_position_claim.hpp), or through the statements below where only they do what the table
// asks. C-style, inside PostgreSQL's error handling.
extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "catalog/pg_type.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/resowner.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include <cstdlib>

#include "claim/pending_claims.hpp"
#include "pg/arguments.hpp"
#include "pg/palloc_elements.hpp"
#include "pg/spi.hpp"
#include "pg/writable.hpp"
#include "store/consumer_registry.hpp"
#include "store/coordinator_tables.hpp"
#include "store/marker_arguments.hpp"
#include "store/marker_table.hpp"
#include "stream/direct_position_claim.hpp"
#include "stream/position_run.hpp"

namespace {

// The stream's row, locked until the transaction ends (FOR UPDATE waits for a claim in flight,
// then reads the row it committed).
MarkerStatement lock_stream = {
    .sql =
        "SELECT position FROM inbox.stream_positions "
        "WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND stream OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\" FOR UPDATE",
    .nargs = 2,
    .argtypes = {INT2OID, TEXTOID},
    .plan = nullptr};

MarkerStatement read_stream = {.sql =
                                   "SELECT position FROM inbox.stream_positions "
                                   "WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
                                   "AND stream OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
                               .nargs = 2,
                               .argtypes = {INT2OID, TEXTOID},
                               .plan = nullptr};

MarkerStatement move_stream = {.sql =
                                   "UPDATE inbox.stream_positions SET position = $3, "
                                   "updated_at = pg_catalog.clock_timestamp() "
                                   "WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
                                   "AND stream OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
                               .nargs = 3,
                               .argtypes = {INT2OID, TEXTOID, INT8OID},
                               .plan = nullptr};

// Waits for a transaction that creates the same stream; inserts nothing if it committed.
MarkerStatement create_stream = {
    .sql =
        "INSERT INTO inbox.stream_positions (consumer_id, position, updated_at, stream) "
        "VALUES ($1, $3, pg_catalog.clock_timestamp(), $2) ON CONFLICT DO NOTHING",
    .nargs = 3,
    .argtypes = {INT2OID, TEXTOID, INT8OID},
    .plan = nullptr};

// A position that is not contiguous in one statement: inserted for a new stream, moved when
// beyond the committed one (as the direct claim does). ON CONFLICT locks the row, waiting for a
// claim in flight, and decides on the row that claim committed: a row returned is next, none a
// duplicate.
MarkerStatement advance_stream = {
    .sql =
        "INSERT INTO inbox.stream_positions AS s (consumer_id, position, updated_at, stream) "
        "VALUES ($1, $3, pg_catalog.clock_timestamp(), $2) "
        "ON CONFLICT (consumer_id, stream) DO UPDATE "
        "SET position = excluded.position, updated_at = excluded.updated_at "
        "WHERE s.position OPERATOR(pg_catalog.<) excluded.position RETURNING 1",
    .nargs = 3,
    .argtypes = {INT2OID, TEXTOID, INT8OID},
    .plan = nullptr};

MarkerStatement delete_stream = {
    .sql =
        "DELETE FROM inbox.stream_positions "
        "WHERE consumer_id OPERATOR(pg_catalog.=) $1 "
        "AND stream OPERATOR(pg_catalog.=) $2 COLLATE pg_catalog.\"C\"",
    .nargs = 2,
    .argtypes = {INT2OID, TEXTOID},
    .plan = nullptr};

// The position the statement read, if it read a row.
inbox::StreamPosition read_position(MarkerStatement* statement, const Consumer& consumer,
                                    text* stream) {
    Datum values[2] = {Int16GetDatum(consumer.id), PointerGetDatum(stream)};
    execute_as_store_owner(statement, values);
    if (SPI_processed == 0) return {false, 0};
    bool isnull = true;
    Datum position = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
    return {true, DatumGetInt64(position)};
}

// Whether another transaction created the stream since it was read: as the direct claim does,
// waits for a claim in flight that creates it, through the insert that would conflict with it
// (FOR UPDATE sees no row being inserted), in a subtransaction rolled back, so that the stream
// is not created (nor a trigger's work kept). For a claim that moves nothing: a contiguous claim
// of a stream nobody has committed yet, whose gap the first claim in flight may fill.
bool created_meanwhile(const Consumer& consumer, text* stream, int64 position) {
    MemoryContext context = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    BeginInternalSubTransaction(nullptr);
    MemoryContextSwitchTo(context);
    Datum values[3] = {Int16GetDatum(consumer.id), PointerGetDatum(stream),
                       Int64GetDatum(position)};
    execute_as_store_owner(&create_stream, values);
    bool inserted = SPI_processed == 1;
    RollbackAndReleaseCurrentSubTransaction();
    MemoryContextSwitchTo(context);
    CurrentResourceOwner = owner;
    return !inserted;
}

// The claim with statements, for a table the direct claim does not serve
// (direct_position_claim.hpp): one statement for a single position that is not contiguous; else the
// row locked and read, then moved or created.
inbox::PositionRun claim_with_statements(const Consumer& consumer, text* stream,
                                         const int64* ascending, int count, bool contiguous) {
    if (!contiguous && count == 1) {
        Datum values[3] = {Int16GetDatum(consumer.id), PointerGetDatum(stream),
                           Int64GetDatum(ascending[0])};
        execute_as_store_owner(&advance_stream, values);
        return SPI_processed == 1 ? inbox::PositionRun{0, 1} : inbox::PositionRun{1, 1};
    }
    for (;;) {
        inbox::StreamPosition committed = read_position(&lock_stream, consumer, stream);
        inbox::PositionRun run = inbox::classify_positions(committed, ascending, count, contiguous);
        if (run.end_next == run.first_next) {
            if (!committed.known && created_meanwhile(consumer, stream, ascending[0])) continue;
            return run;
        }
        Datum values[3] = {Int16GetDatum(consumer.id), PointerGetDatum(stream),
                           Int64GetDatum(ascending[run.end_next - 1])};
        if (committed.known) {
            execute_as_store_owner(&move_stream, values);
            return run;
        }
        execute_as_store_owner(&create_stream, values);
        if (SPI_processed == 1) return run;
        // Another transaction created the stream and committed meanwhile: read what it left.
    }
}

// Claims positions (ascending, distinct) of the consumer's stream in the caller's transaction,
// in the caller's SPI connection: the stream moves to the last of the next ones.
inbox::PositionRun claim_in_stream(const Consumer& consumer, text* stream, const int64* ascending,
                                   int count, bool contiguous) {
    inbox::PositionRun run = {0, 0};
    if (claim_positions_directly(consumer, stream, ascending, count, contiguous, &run)) return run;
    return claim_with_statements(consumer, stream, ascending, count, contiguous);
}

int64 require_position_value(int64 position, const char* what) {
    if (position < 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%s must not be negative, not " INT64_FORMAT, what, position),
                        errhint("Positions are offsets or sequence numbers: 0 and above.")));
    return position;
}

int compare_positions(const void* left, const void* right) {
    int64 a = *static_cast<const int64*>(left);
    int64 b = *static_cast<const int64*>(right);
    return (a > b) - (a < b);
}

// The positions of the array argument, ascending and distinct; *count set to how many.
int64* require_positions(FunctionCallInfo fcinfo, int argno, int* count) {
    pg::require_argument(fcinfo, argno, "positions",
                         "The positions of a polled batch, such as ARRAY[41, 42, 43].");
    Datum* elements = nullptr;
    bool* nulls = nullptr;
    int given = 0;
    deconstruct_array(PG_GETARG_ARRAYTYPE_P(argno), INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE,
                      &elements, &nulls, &given);
    int64* positions = pg::palloc_elements<int64>(given > 0 ? given : 1);
    for (int i = 0; i < given; i++) {
        if (nulls[i])
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                            errmsg("positions[%d] must not be NULL", i + 1)));
        positions[i] = require_position_value(DatumGetInt64(elements[i]), "a position");
    }
    qsort(positions, given, sizeof(int64), compare_positions);
    int distinct = 0;
    for (int i = 0; i < given; i++)
        if (distinct == 0 || positions[distinct - 1] != positions[i])
            positions[distinct++] = positions[i];
    *count = distinct;
    return positions;
}

// Positions count in inbox.stats as claims of messages do: the next ones as applied when the
// transaction commits, the duplicates now; a position after a gap is no delivery yet.
void count_positions(text* consumer, const inbox::PositionRun& run) {
    count_claims(consumer, static_cast<int64>(run.end_next - run.first_next),
                 static_cast<int64>(run.first_next));
}

// Positions are claimed and read in the coordinator's table, whichever node a consumer's next
// claim runs on.
void require_coordinator_positions(const char* function) {
    require_coordinator_table(function, "inbox.stream_positions",
                              "Claim and read positions through the coordinator: a function "
                              "that does is not to be delegated to a worker "
                              "(create_distributed_function).");
}

bool contiguous_argument(FunctionCallInfo fcinfo, int argno) {
    pg::require_argument(fcinfo, argno, "contiguous",
                         "true for positions numbered 1, 2, 3 without holes (an aggregate's "
                         "events); false (the default) for offsets with holes.");
    return PG_GETARG_BOOL(argno);
}

// A contiguous stream starts at 1: a position below (0) is refused rather than answered
// 'duplicate', which would skip the first event of an aggregate numbered from 0.
void require_contiguous_position(int64 lowest, bool contiguous) {
    if (contiguous && lowest < inbox::first_contiguous_position)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("a contiguous position must be at least " INT64_FORMAT
                               ", not " INT64_FORMAT,
                               static_cast<int64>(inbox::first_contiguous_position), lowest),
                        errhint("Number an aggregate's events from 1; offsets that start at 0 "
                                "(a Kafka partition) are claimed without contiguous.")));
}

}  // namespace

extern "C" {

// 'next': do the work, the stream moves to the position at commit; 'duplicate': at or below the
// committed position, skip; 'gap' (contiguous only): a position before it is missing.
PG_FUNCTION_INFO_V1(inbox_claim_position);
PGDLLEXPORT Datum inbox_claim_position(PG_FUNCTION_ARGS) {
    require_coordinator_positions("inbox.claim_position()");
    pg::require_writable("inbox.claim_position()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    text* stream = require_stream_name(fcinfo, 1);
    pg::require_argument(fcinfo, 2, "position");
    int64 position = require_position_value(PG_GETARG_INT64(2), "position");
    bool contiguous = contiguous_argument(fcinfo, 3);
    require_contiguous_position(position, contiguous);

    pg::spi_connect();
    Consumer consumer;
    find_consumer_to_act(consumer_name, Registration::by_claim, &consumer);
    inbox::PositionRun run = claim_in_stream(consumer, stream, &position, 1, contiguous);
    SPI_finish();
    count_positions(consumer_name, run);
    const char* answer = run.first_next == 1 ? "duplicate" : run.end_next == 1 ? "next" : "gap";
    PG_RETURN_TEXT_P(cstring_to_text(answer));
}

// The positions of a polled batch that are next, ascending: the others are duplicates, or, when
// contiguous, follow a gap. The stream moves to the last one returned.
PG_FUNCTION_INFO_V1(inbox_claim_positions);
PGDLLEXPORT Datum inbox_claim_positions(PG_FUNCTION_ARGS) {
    require_coordinator_positions("inbox.claim_positions()");
    pg::require_writable("inbox.claim_positions()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    text* stream = require_stream_name(fcinfo, 1);
    int count = 0;
    int64* positions = require_positions(fcinfo, 2, &count);
    bool contiguous = contiguous_argument(fcinfo, 3);
    if (count > 0) require_contiguous_position(positions[0], contiguous);

    pg::spi_connect();
    Consumer consumer;
    find_consumer_to_act(consumer_name, Registration::by_claim, &consumer);
    inbox::PositionRun run = claim_in_stream(consumer, stream, positions, count, contiguous);
    SPI_finish();
    int next_count = static_cast<int>(run.end_next - run.first_next);
    count_positions(consumer_name, run);
    Datum* next = pg::palloc_elements<Datum>(next_count > 0 ? next_count : 1);
    for (int i = 0; i < next_count; i++) next[i] = Int64GetDatum(positions[run.first_next + i]);
    PG_RETURN_ARRAYTYPE_P(
        construct_array(next, next_count, INT8OID, sizeof(int64), true, TYPALIGN_DOUBLE));
}

// The committed position of the stream, where a consumer resumes (NULL: never claimed).
PG_FUNCTION_INFO_V1(inbox_stream_position);
PGDLLEXPORT Datum inbox_stream_position(PG_FUNCTION_ARGS) {
    require_coordinator_positions("inbox.stream_position()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    text* stream = require_stream_name(fcinfo, 1);
    pg::spi_connect();
    Consumer consumer;
    inbox::StreamPosition committed = {false, 0};
    if (find_consumer_to_act(consumer_name, Registration::none, &consumer))
        committed = read_position(&read_stream, consumer, stream);
    SPI_finish();
    if (!committed.known) PG_RETURN_NULL();
    PG_RETURN_INT64(committed.position);
}

// Deletes the stream's position (waiting for a claim in flight): its next claim starts it afresh.
// True when it had one.
PG_FUNCTION_INFO_V1(inbox_retire_stream);
PGDLLEXPORT Datum inbox_retire_stream(PG_FUNCTION_ARGS) {
    require_coordinator_positions("inbox.retire_stream()");
    pg::require_writable("inbox.retire_stream()");
    text* consumer_name = require_consumer_name(fcinfo, 0);
    text* stream = require_stream_name(fcinfo, 1);
    pg::spi_connect();
    Consumer consumer;
    bool retired = false;
    if (find_consumer_to_act(consumer_name, Registration::none, &consumer)) {
        Datum values[2] = {Int16GetDatum(consumer.id), PointerGetDatum(stream)};
        execute_as_store_owner(&delete_stream, values);
        retired = SPI_processed > 0;
    }
    SPI_finish();
    PG_RETURN_BOOL(retired);
}
}
