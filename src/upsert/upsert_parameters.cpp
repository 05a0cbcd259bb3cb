// See upsert_parameters.hpp.
extern "C" {
#include "postgres.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
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

// What the input function makes of json_value_text(value), when it can be made directly:
// textin copies the string's bytes (a jsonb string holds no NUL); numeric_in reads back the
// number numeric_out printed, digits and scale alike, and rounds it to the typmod as numeric()
// does, with the same error when it does not fit.
bool make_directly(const ColumnInput* input, const JsonbValue* value, Datum* parameter) {
    if (input->direct == DirectInput::text_from_string && value->type == jbvString) {
        *parameter =
            PointerGetDatum(cstring_to_text_with_len(value->val.string.val, value->val.string.len));
        return true;
    }
    if (input->direct == DirectInput::numeric_from_number && value->type == jbvNumeric) {
        *parameter = DirectFunctionCall2(numeric, NumericGetDatum(value->val.numeric),
                                         Int32GetDatum(input->typmod));
        return true;
    }
    return false;
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
    input->direct = function == F_TEXTIN       ? DirectInput::text_from_string
                    : function == F_NUMERIC_IN ? DirectInput::numeric_from_number
                                               : DirectInput::none;
}

void make_typed_parameters(const ColumnInput* inputs, int count, const JsonbValue* values,
                           Datum* parameters, bool* nulls) {
    for (int i = 0; i < count; i++) {
        const ColumnInput* input = &inputs[i];
        const JsonbValue* value = &values[input->attnum - 1];
        if (make_directly(input, value, &parameters[i])) {
            nulls[i] = false;
            continue;
        }
        char* text = json_value_text(value);
        parameters[i] = InputFunctionCall(const_cast<FmgrInfo*>(&input->function), text,
                                          input->ioparam, input->typmod);
        nulls[i] = text == nullptr;
    }
}
