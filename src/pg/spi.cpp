// See spi.hpp: connecting to SPI, and running a kept plan with a snapshot taken now.
#include "pg/spi.hpp"

extern "C" {
#include "utils/snapmgr.h"
}

namespace pg {

namespace {

void connect_with(int options) {
    if (SPI_connect_ext(options) != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
}

}  // namespace

void spi_connect() {
    connect_with(0);
}

void spi_connect_nonatomic() {
    connect_with(SPI_OPT_NONATOMIC);
}

SPIPlanPtr prepare_kept_plan(const char* sql, int nargs, const Oid* argtypes) {
    spi_connect();
    SPIPlanPtr plan = SPI_prepare(sql, nargs, const_cast<Oid*>(argtypes));
    if (plan == nullptr)
        elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
    SPI_keepplan(plan);
    SPI_finish();
    return plan;
}

int execute_plan(SPIPlanPtr plan, const char* sql, const Datum* values, const char* nulls) {
    int rc = SPI_execute_plan(plan, const_cast<Datum*>(values), nulls, false, 0);
    if (rc < 0) elog(ERROR, "\"%s\" failed: %s", sql, SPI_result_code_string(rc));
    return rc;
}

int execute_plan_latest(SPIPlanPtr plan, const char* sql, const Datum* values, const char* nulls) {
    int rc = SPI_execute_snapshot(plan, const_cast<Datum*>(values), nulls, GetLatestSnapshot(),
                                  InvalidSnapshot, false, false, 0);
    if (rc < 0) elog(ERROR, "\"%s\" failed: %s", sql, SPI_result_code_string(rc));
    return rc;
}

}  // namespace pg
