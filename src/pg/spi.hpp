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

// SPI_execute_plan of a kept plan, or an error naming the statement.
int execute_plan(SPIPlanPtr plan, const char* sql, const Datum* values, const char* nulls);

}  // namespace pg
