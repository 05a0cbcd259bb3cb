// The typed parameters of a natural-idempotency statement: each column's value made from its
// json value by the column type's own input function, as jsonb_to_record makes it, so that a
// domain's constraints and a typmod apply, and a value that does not convert is an error, never
// NULL.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "access/attnum.h"
#include "utils/jsonb.h"
}

// How one typed parameter is made: the column type's input function. For text and numeric
// columns (not domains over them) the value the input function would make from a json string,
// respectively a json number, is made directly: the same value, without the text in between.
enum class DirectInput { none, text_from_string, numeric_from_number };

struct ColumnInput {
    AttrNumber attnum;
    Oid ioparam;
    int32 typmod;
    DirectInput direct;
    FmgrInfo function;
};

// Whether values of `type` are made from text by its input function (numbers, text, uuid, dates,
// enums, domains over those, ...). Arrays, composites and json types are not: the statement
// then takes the json row and converts it with jsonb_to_record.
bool converts_from_text(Oid type);

// The input of column `attnum`, of `type` and `typmod`, with its function kept in `context`.
void prepare_column_input(ColumnInput* input, AttrNumber attnum, Oid type, int32 typmod,
                          MemoryContext context);

// One parameter per input, from the json values of the incoming row (values[attnum - 1]).
void make_typed_parameters(const ColumnInput* inputs, int count, const JsonbValue* values,
                           Datum* parameters, bool* nulls);
