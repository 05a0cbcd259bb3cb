// See spi.hpp: connecting to SPI, and running a kept plan with a snapshot taken now.
#include "pg/spi.hpp"

extern "C" {
#include "nodes/params.h"
#include "parser/parse_node.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
}

namespace pg {

namespace {

void connect_with(int options) {
    if (SPI_connect_ext(options) != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
}

// $n as parse analysis sees it: of the n-th type and typmod (what fixed_paramref_hook makes,
// with the typmod).
Node* typed_parameter(ParseState* parse_state, ParamRef* reference) {
    auto* parameters = static_cast<const ParameterTypes*>(parse_state->p_ref_hook_state);
    int number = reference->number;
    if (number <= 0 || number > parameters->count)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_PARAMETER),
                        errmsg("there is no parameter $%d", number)));
    Param* parameter = makeNode(Param);
    parameter->paramkind = PARAM_EXTERN;
    parameter->paramid = number;
    parameter->paramtype = parameters->types[number - 1];
    parameter->paramtypmod = parameters->typmods[number - 1];
    parameter->paramcollid = get_typcollation(parameter->paramtype);
    parameter->location = reference->location;
    return reinterpret_cast<Node*>(parameter);
}

void set_up_typed_parameters(ParseState* parse_state, void* parameters) {
    parse_state->p_paramref_hook = typed_parameter;
    parse_state->p_ref_hook_state = parameters;
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

SPIPlanPtr prepare_kept_plan(const char* sql, const ParameterTypes* parameters) {
    spi_connect();
    SPIPlanPtr plan = SPI_prepare_params(sql, set_up_typed_parameters,
                                         const_cast<ParameterTypes*>(parameters), 0);
    if (plan == nullptr)
        elog(ERROR, "could not prepare \"%s\": %s", sql, SPI_result_code_string(SPI_result));
    SPI_keepplan(plan);
    SPI_finish();
    return plan;
}

int execute_typed_plan(SPIPlanPtr plan, const ParameterTypes* parameters, const Datum* values,
                       const bool* nulls) {
    ParamListInfo list = makeParamList(parameters->count);
    for (int i = 0; i < parameters->count; i++) {
        list->params[i].value = values[i];
        list->params[i].isnull = nulls[i];
        list->params[i].pflags = PARAM_FLAG_CONST;
        list->params[i].ptype = parameters->types[i];
    }
    return SPI_execute_plan_with_paramlist(plan, list, false, 0);
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
