#include "core/model/chat_request.h"

namespace sw::model {

QStringList ChatRequest::customToolNames() const {
    QStringList names;
    for (const Tool &t : context.tools)
        if (t.custom)
            names << t.name;
    return names;
}

} // namespace sw::model
