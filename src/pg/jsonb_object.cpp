// See jsonb_object.hpp: what fillJsonbValue does for JsonbIteratorNext, reading the entries in
// order so that each one's offset is the previous one's end.
#include "pg/jsonb_object.hpp"

namespace pg {

JsonbObjectReader read_object(const JsonbContainer* object) {
    Assert(JsonContainerIsObject(object));
    int pair_count = static_cast<int>(JsonContainerSize(object));
    // the entries' bytes follow their headers: the keys', then the values'
    const auto* data = reinterpret_cast<const char*>(&object->children[2 * ptrdiff_t{pair_count}]);
    return {object, pair_count, data, 0, 0};
}

void next_key(JsonbObjectReader* reader, const char** name, int* length) {
    Assert(reader->next < reader->pair_count);
    uint32 start = reader->offset;
    JBE_ADVANCE_OFFSET(reader->offset, reader->object->children[reader->next++]);
    *name = reader->data + start;
    *length = static_cast<int>(reader->offset - start);
}

void next_value(JsonbObjectReader* reader, JsonbValue* value) {
    Assert(reader->next >= reader->pair_count && reader->next < reader->pair_count * 2);
    JEntry entry = reader->object->children[reader->next++];
    uint32 start = reader->offset;
    JBE_ADVANCE_OFFSET(reader->offset, entry);
    const char* data = reader->data;
    if (JBE_ISNULL(entry)) {
        value->type = jbvNull;
    } else if (JBE_ISSTRING(entry)) {
        value->type = jbvString;
        value->val.string.val = const_cast<char*>(data + start);
        value->val.string.len = static_cast<int>(reader->offset - start);
    } else if (JBE_ISNUMERIC(entry)) {
        value->type = jbvNumeric;
        value->val.numeric = reinterpret_cast<Numeric>(const_cast<char*>(data + INTALIGN(start)));
    } else if (JBE_ISBOOL_TRUE(entry) || JBE_ISBOOL_FALSE(entry)) {
        value->type = jbvBool;
        value->val.boolean = JBE_ISBOOL_TRUE(entry);
    } else {  // a container, aligned like a numeric
        value->type = jbvBinary;
        value->val.binary.data =
            reinterpret_cast<JsonbContainer*>(const_cast<char*>(data + INTALIGN(start)));
        value->val.binary.len = static_cast<int>(reader->offset - INTALIGN(start));
    }
}

}  // namespace pg
