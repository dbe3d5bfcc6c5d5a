#include "core/model/event_accumulator.h"

#include <QJsonDocument>

#include <utility>

namespace sw::model {

QJsonObject parseToolArguments(const QString &json) {
    if (json.trimmed().isEmpty())
        return {};
    const QJsonDocument doc = QJsonDocument::fromJson(json.toUtf8());
    return doc.isObject() ? doc.object() : QJsonObject();
}

namespace {

bool isJsonSpace(QChar c) {
    return c == u' ' || c == u'\t' || c == u'\n' || c == u'\r';
}

} // namespace

QString ToolArgumentsGate::pass(const QString &fragment) {
    if (m_state != State::Undecided)
        return m_state == State::Object ? fragment : QString();
    m_pending += fragment;
    for (const QChar c : std::as_const(m_pending)) {
        if (isJsonSpace(c))
            continue;
        m_state = c == u'{' ? State::Object : State::Held;
        return m_state == State::Object ? std::exchange(m_pending, {}) : (m_pending.clear(), QString());
    }
    return {};
}

ContentBlock &EventAccumulator::blockFor(int contentIndex, BlockType type) {
    auto it = m_positionByIndex.constFind(contentIndex);
    if (it != m_positionByIndex.constEnd())
        return m_message.content[*it];
    // A delta without its start still lands in a block of the right type.
    ContentBlock block;
    block.type = type;
    m_positionByIndex.insert(contentIndex, m_message.content.size());
    m_message.content.append(block);
    return m_message.content.last();
}

void EventAccumulator::add(const StreamEvent &event) {
    switch (event.type) {
    case EventType::Start:
        if (!event.responseId.isEmpty())
            m_message.responseId = event.responseId;
        break;
    case EventType::TextStart:
    case EventType::ThinkingStart:
    case EventType::ToolCallStart: {
        const BlockType type = event.type == EventType::TextStart       ? BlockType::Text
                               : event.type == EventType::ThinkingStart ? BlockType::Thinking
                                                                        : BlockType::ToolCall;
        ContentBlock &b = blockFor(event.contentIndex, type);
        b = event.block;
        b.type = type;
        break;
    }
    case EventType::TextDelta:
        blockFor(event.contentIndex, BlockType::Text).text += event.delta;
        break;
    case EventType::ThinkingDelta:
        blockFor(event.contentIndex, BlockType::Thinking).text += event.delta;
        break;
    case EventType::ToolCallDelta:
        blockFor(event.contentIndex, BlockType::ToolCall).argumentsJson += event.delta;
        break;
    case EventType::TextEnd:
    case EventType::ThinkingEnd:
    case EventType::ToolCallEnd: {
        const BlockType type = event.type == EventType::TextEnd       ? BlockType::Text
                               : event.type == EventType::ThinkingEnd ? BlockType::Thinking
                                                                      : BlockType::ToolCall;
        ContentBlock &b = blockFor(event.contentIndex, type);
        const ContentBlock streamed = b;
        b = event.block;
        b.type = type;
        // An end event that carries less than was streamed keeps the streamed text.
        if (b.text.isEmpty())
            b.text = streamed.text;
        if (b.argumentsJson.isEmpty())
            b.argumentsJson = streamed.argumentsJson;
        if (b.toolCallId.isEmpty())
            b.toolCallId = streamed.toolCallId;
        if (b.toolName.isEmpty())
            b.toolName = streamed.toolName;
        if (b.itemId.isEmpty())
            b.itemId = streamed.itemId;
        if (type == BlockType::ToolCall && b.arguments.isEmpty())
            b.arguments = parseToolArguments(b.argumentsJson);
        break;
    }
    case EventType::Image: {
        ContentBlock &b = blockFor(event.contentIndex, BlockType::Image);
        b = event.block;
        b.type = BlockType::Image;
        break;
    }
    case EventType::Done:
        m_message.stopReason = event.reason;
        m_message.usage = event.usage;
        m_message.stopSequence = event.stopSequence;
        m_message.native = event.native;
        m_message.nativeUsageJson = event.nativeUsageJson;
        finalizeToolCalls();
        m_finished = true;
        break;
    case EventType::Error:
        m_message.stopReason = event.reason == StopReason::Aborted ? StopReason::Aborted : StopReason::Error;
        m_message.errorMessage = event.errorMessage;
        m_message.errorStatus = event.errorStatus;
        if (!event.usage.isZero())
            m_message.usage = event.usage;
        finalizeToolCalls();
        m_finished = true;
        break;
    }
}

void EventAccumulator::addAll(const QList<StreamEvent> &events) {
    for (const StreamEvent &e : events)
        add(e);
}

void EventAccumulator::finalizeToolCalls() {
    for (ContentBlock &b : m_message.content)
        if (b.type == BlockType::ToolCall && b.arguments.isEmpty())
            b.arguments = parseToolArguments(b.argumentsJson);
}

AssistantMessage EventAccumulator::takeMessage() {
    AssistantMessage m = std::move(m_message);
    m_message = {};
    m_positionByIndex.clear();
    m_finished = false;
    return m;
}

} // namespace sw::model
