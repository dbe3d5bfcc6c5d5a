#include "core/model/chat_request.h"

namespace sw::model {

QStringList ChatRequest::customToolNames() const {
    QStringList names;
    for (const Tool &t : context.tools)
        if (t.custom)
            names << t.name;
    return names;
}

QSet<QString> ChatRequest::historyToolIds() const {
    QSet<QString> ids;
    for (const Message &m : context.messages)
        if (m.role == Role::Assistant)
            for (const ContentBlock &b : m.content)
                if (b.type == BlockType::ToolCall)
                    ids.insert(b.toolCallId);
    return ids;
}

} // namespace sw::model
