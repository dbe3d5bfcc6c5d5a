#include "core/wire/document_part.h"

namespace sw::wire {

namespace {

bool namesString(const rj::Value *object, const char *key) {
    const rj::Value *v = rj::member(object, key);
    return rj::isString(v) && v->GetStringLength() > 0;
}

} // namespace

bool isTranslatableDocument(const rj::Value &part) {
    const rj::Value *type = rj::member(&part, "type");
    if (rj::equals(type, "document")) {
        // Citations are an answer feature of Messages alone: another API would answer without them.
        if (rj::toBool(rj::member(rj::asObject(rj::member(&part, "citations")), "enabled"), false))
            return false;
        const rj::Value *kind = rj::member(rj::asObject(rj::member(&part, "source")), "type");
        return rj::equals(kind, "base64") || rj::equals(kind, "text") || rj::equals(kind, "url") ||
               rj::equals(kind, "file");
    }
    if (rj::equals(type, "file")) {
        const rj::Value *file = rj::asObject(rj::member(&part, "file"));
        return namesString(file, "file_data") || namesString(file, "file_id");
    }
    if (rj::equals(type, "input_file"))
        return namesString(&part, "file_data") || namesString(&part, "file_id") || namesString(&part, "file_url");
    return false;
}

} // namespace sw::wire
