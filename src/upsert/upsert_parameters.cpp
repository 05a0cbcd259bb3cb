// See upsert_parameters.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

#include "upsert/upsert_parameters.hpp"

namespace {

// The text the column type's input function reads, as jsonb_to_record makes it; NULL for null.
char* json_value_text(const JsonbValue* value) {
    switch (value->type) {
        case jbvNull:
            return nullptr;
        case jbvString:
            return pnstrdup(value->val.string.val, value->val.string.len);
        case jbvBool:
            return pstrdup(value->val.boolean ? "true" : "false");
        case jbvNumeric:
            return DatumGetCString(
                DirectFunctionCall1(numeric_out, NumericGetDatum(value->val.numeric)));
        case jbvBinary:
            return JsonbToCString(nullptr, value->val.binary.data, value->val.binary.len);
        default:
            elog(ERROR, "unexpected jsonb value type %d", (int)value->type);
    }
}

}  // namespace

bool converts_from_text(Oid type) {
    Oid base = getBaseType(type);
    return OidIsValid(base) && !OidIsValid(get_element_type(base)) &&
           get_typtype(base) != TYPTYPE_COMPOSITE && base != JSONOID && base != JSONBOID;
}

void prepare_column_input(ColumnInput* input, AttrNumber attnum, Oid type, int32 typmod,
                          MemoryContext context) {
    Oid function;
    getTypeInputInfo(type, &function, &input->ioparam);
    fmgr_info_cxt(function, &input->function, context);
    input->attnum = attnum;
    input->typmod = typmod;
}

void make_typed_parameters(const ColumnInput* inputs, int count, const JsonbValue* values,
                           Datum* parameters, char* nulls) {
    for (int i = 0; i < count; i++) {
        const ColumnInput* input = &inputs[i];
        char* text = json_value_text(&values[input->attnum - 1]);
        parameters[i] = InputFunctionCall(const_cast<FmgrInfo*>(&input->function), text,
                                          input->ioparam, input->typmod);
        nulls[i] = text == nullptr ? 'n' : ' ';
    }
}
