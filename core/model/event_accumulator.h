#pragma once
// Folds a canonical event stream into the finished AssistantMessage. Used to
// answer non-streaming requests and by tests to compare streams by content.

#include "core/model/chat.h"

#include <QHash>

namespace sw::model {

class EventAccumulator final {
public:
    void add(const StreamEvent &event);
    void addAll(const QList<StreamEvent> &events);
    // True after Done or Error.
    bool isFinished() const { return m_finished; }
    const AssistantMessage &message() const { return m_message; }
    AssistantMessage takeMessage();

private:
    ContentBlock &blockFor(int contentIndex, BlockType type);
    void finalizeToolCalls();

    AssistantMessage m_message;
    QHash<int, qsizetype> m_positionByIndex; // contentIndex -> position in m_message.content
    bool m_finished = false;
};

// Parses tool-call argument text; {} for empty or unparseable text.
QJsonObject parseToolArguments(const QString &json);

} // namespace sw::model
