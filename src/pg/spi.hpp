// The SPI calls every statement of the extension goes through.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/spi.h"
}

namespace pg {

// SPI_connect, or an error saying it failed.
void spi_connect();
// The same for a procedure called outside a transaction block, whose connection may commit
// (SPI_commit) and go on in a new transaction.
void spi_connect_nonatomic();

// The plan of `sql`, prepared once and kept for the backend's life (SPI_keepplan): the plan
// cache re-plans it when anything it depends on changes. Works inside or outside an SPI
// connection.
SPIPlanPtr prepare_kept_plan(const char* sql, int nargs, const Oid* argtypes);

// The types of a statement's parameters $1 .. $count with their typmods: a parameter assigned to
// a column of the same type and typmod needs no length coercion in the plan, as a column of a
// record declared with the typmod does not. The caller keeps it as long as the plan: the plan
// cache analyses the statement again with it when the plan goes stale.
struct ParameterTypes {
    int count;
    const Oid* types;
    const int32* typmods;
};

// prepare_kept_plan of a statement with such parameters; run it with execute_typed_plan.
SPIPlanPtr prepare_kept_plan(const char* sql, const ParameterTypes* parameters);

// SPI_execute_plan of a plan made by the above, with a value (or null) for every parameter.
int execute_typed_plan(SPIPlanPtr plan, const ParameterTypes* parameters, const Datum* values,
                       const bool* nulls);

// SPI_execute_plan of a kept plan, or an error naming the statement.
int execute_plan(SPIPlanPtr plan, const char* sql, const Datum* values, const char* nulls);

// The same, reading with a snapshot taken now, which sees every transaction committed so far
// (and this one's own changes) whatever the isolation level's snapshot is.
int execute_plan_latest(SPIPlanPtr plan, const char* sql, const Datum* values, const char* nulls);

}  // namespace pg
