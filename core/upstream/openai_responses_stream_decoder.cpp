#include "upstream/openai_responses_stream_decoder.h"

#include "model/event_accumulator.h"
#include "wire/json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sw::upstream {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

StreamEvent event(EventType type, int contentIndex = -1) {
    StreamEvent e;
    e.type = type;
    e.contentIndex = contentIndex;
    return e;
}

EventType startType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingStart
           : t == BlockType::ToolCall ? EventType::ToolCallStart
                                      : EventType::TextStart;
}

EventType deltaType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingDelta
           : t == BlockType::ToolCall ? EventType::ToolCallDelta
                                      : EventType::TextDelta;
}

EventType endType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingEnd
           : t == BlockType::ToolCall ? EventType::ToolCallEnd
                                      : EventType::TextEnd;
}

} // namespace

OpenAIResponsesStreamDecoder::OpenBlock &OpenAIResponsesStreamDecoder::open(int outputIndex, BlockType type,
                                                                            QList<StreamEvent> &out) {
    auto it = m_open.find(outputIndex);
    if (it != m_open.end())
        return *it;
    OpenBlock b;
    b.contentIndex = m_nextContentIndex++;
    b.block.type = type;
    StreamEvent s = event(startType(type), b.contentIndex);
    s.block = b.block;
    out << s;
    return *m_open.insert(outputIndex, b);
}

void OpenAIResponsesStreamDecoder::close(int outputIndex, QList<StreamEvent> &out) {
    const auto it = m_open.constFind(outputIndex);
    if (it == m_open.constEnd())
        return;
    StreamEvent e = event(endType(it->block.type), it->contentIndex);
    e.block = it->block;
    if (e.block.type == BlockType::ToolCall)
        e.block.arguments = parseToolArguments(e.block.argumentsJson);
    out << e;
    m_open.erase(it);
}

void OpenAIResponsesStreamDecoder::closeAll(QList<StreamEvent> &out) {
    QList<int> keys = m_open.keys();
    std::sort(keys.begin(), keys.end());
    for (int k : keys)
        close(k, out);
}

void OpenAIResponsesStreamDecoder::readUsage(const QJsonObject &usage) {
    if (usage.isEmpty())
        return;
    const qint64 input = usage.value(L("input_tokens")).toInteger();
    const qint64 cached = usage.value(L("input_tokens_details")).toObject().value(L("cached_tokens")).toInteger();
    m_usage.input = qMax<qint64>(0, input - cached);
    m_usage.cacheRead = cached;
    m_usage.cacheWrite = 0;
    m_usage.output = usage.value(L("output_tokens")).toInteger();
}

StreamEvent OpenAIResponsesStreamDecoder::errorEvent(const QString &code, const QString &message) {
    m_terminal = true;
    StreamEvent e = event(EventType::Error);
    e.reason = StopReason::Error;
    e.errorType = code;
    e.errorMessage = code.isEmpty() ? QStringLiteral("OpenAI Responses stream error: %1").arg(message)
                                    : QStringLiteral("OpenAI Responses stream error (%1): %2").arg(code, message);
    e.errorStatus = wire::statusForOpenAIError(QJsonObject{{L("code"), code}});
    e.usage = m_usage;
    return e;
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::feed(const SseEvent &sse) {
    return m_sequencer.feed(decode(sse));
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::finish() {
    return m_sequencer.feed(decodeFinish());
}

namespace {
// `text` escaped as the inside of a JSON string (no quotes around it).
QString jsonStringBody(const QString &text) {
    const QByteArray quoted = QJsonDocument(QJsonArray{text}).toJson(QJsonDocument::Compact); // ["…"]
    return QString::fromUtf8(quoted.mid(2, quoted.size() - 4));
}
} // namespace

QList<StreamEvent> OpenAIResponsesStreamDecoder::decode(const SseEvent &sse) {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    const QByteArray raw = sse.data.trimmed();
    if (raw.isEmpty() || raw == "[DONE]")
        return out;
    const QJsonObject data = QJsonDocument::fromJson(raw).object();
    QString type = data.value(L("type")).toString();
    if (type.isEmpty())
        type = QString::fromUtf8(sse.event);
    if (type.isEmpty())
        return out;

    if (type == L("error")) {
        // {type:error, code, message} (older servers nest it in "error")
        const QJsonObject err = data.value(L("error")).isObject() ? data.value(L("error")).toObject() : data;
        const QJsonValue code = err.value(L("code"));
        // response.failed follows: the error ends the stream there (or at the end of the body),
        // so a passthrough client gets both frames.
        m_pendingErrorCode = code.isString() ? code.toString() : err.value(L("type")).toString();
        m_pendingErrorMessage = err.value(L("message")).toString(QStringLiteral("unknown error"));
        return out;
    }
    if (type == L("response.failed")) {
        const QJsonObject response = data.value(L("response")).toObject();
        readUsage(response.value(L("usage")).toObject());
        const QJsonObject err = response.value(L("error")).toObject();
        const QString message = err.value(L("message")).toString();
        if (message.isEmpty() && !m_pendingErrorMessage.isEmpty())
            out << errorEvent(m_pendingErrorCode, m_pendingErrorMessage);
        else
            out << errorEvent(err.value(L("code")).toString(m_pendingErrorCode),
                              message.isEmpty() ? QStringLiteral("the response failed") : message);
        return out;
    }
    if (!m_started) {
        m_started = true;
        StreamEvent e = event(EventType::Start);
        e.responseId = data.value(L("response")).toObject().value(L("id")).toString();
        out << e;
    }
    const int oi = data.value(L("output_index")).toInt(-1);
    if (type == L("response.output_item.added")) {
        const QJsonObject item = data.value(L("item")).toObject();
        const QString itemType = item.value(L("type")).toString();
        if (itemType == L("reasoning")) {
            open(oi, BlockType::Thinking, out).block.itemId = item.value(L("id")).toString();
        } else if (itemType == L("function_call") || itemType == L("custom_tool_call")) {
            m_sawToolCall = true;
            OpenBlock b;
            b.contentIndex = m_nextContentIndex++;
            b.block.type = BlockType::ToolCall;
            b.block.custom = itemType == L("custom_tool_call");
            b.block.itemId = item.value(L("id")).toString();
            b.block.toolCallId = item.value(L("call_id")).toString();
            b.block.toolName = item.value(L("name")).toString();
            StreamEvent s = event(EventType::ToolCallStart, b.contentIndex);
            s.block = b.block;
            out << s;
            m_open.insert(oi, b);
        }
        return out; // a message item opens its block with its content part
    }
    if (type == L("response.content_part.added")) {
        const QString partType = data.value(L("part")).toObject().value(L("type")).toString();
        m_sawRefusal |= partType == L("refusal");
        if (partType == L("output_text") || partType == L("refusal"))
            open(oi, BlockType::Text, out).block.itemId = data.value(L("item_id")).toString();
        return out;
    }
    if (type == L("response.output_text.delta") || type == L("response.refusal.delta") ||
        type == L("response.reasoning_summary_text.delta") || type == L("response.reasoning_text.delta") ||
        type == L("response.function_call_arguments.delta")) {
        const BlockType kind = type.startsWith(L("response.reasoning"))              ? BlockType::Thinking
                               : type == L("response.function_call_arguments.delta") ? BlockType::ToolCall
                                                                                     : BlockType::Text;
        m_sawRefusal |= type == L("response.refusal.delta");
        const QString delta = data.value(L("delta")).toString();
        if (delta.isEmpty())
            return out;
        OpenBlock &b = open(oi, kind, out);
        StreamEvent d = event(deltaType(b.block.type), b.contentIndex);
        d.delta = delta;
        if (b.block.type == BlockType::ToolCall)
            b.block.argumentsJson += delta;
        else
            b.block.text += delta;
        out << d;
        return out;
    }
    if (type == L("response.custom_tool_call_input.delta")) {
        // A custom tool's input is text; canonically it is the argument JSON {"input": "…"},
        // streamed as escaped fragments so the call commits and counts as it arrives.
        const QString piece = data.value(L("delta")).toString();
        auto it = m_open.find(oi);
        if (piece.isEmpty() || it == m_open.end() || !it->block.custom)
            return out;
        StreamEvent d = event(EventType::ToolCallDelta, it->contentIndex);
        d.delta =
            (it->block.argumentsJson.isEmpty() ? QStringLiteral("{\"input\":\"") : QString()) + jsonStringBody(piece);
        it->block.argumentsJson += d.delta;
        out << d;
        return out;
    }
    if (type == L("response.reasoning_summary_part.added")) {
        OpenBlock &b = open(oi, BlockType::Thinking, out);
        if (b.summaryParts++ > 0 && !b.block.text.isEmpty()) { // parts of one summary, as paragraphs
            StreamEvent d = event(EventType::ThinkingDelta, b.contentIndex);
            d.delta = QStringLiteral("\n\n");
            b.block.text += d.delta;
            out << d;
        }
        return out;
    }
    if (type == L("response.content_part.done")) {
        close(oi, out);
        return out;
    }
    if (type == L("response.output_item.done")) {
        const QJsonObject item = data.value(L("item")).toObject();
        m_doneItemBytes += raw.size();
        if (m_doneItemBytes <= kMaxNativeChars)
            m_doneItems.insert(oi, item);
        const QString itemType = item.value(L("type")).toString();
        auto it = m_open.find(oi);
        if (itemType == L("reasoning")) {
            if (it == m_open.end())
                it = m_open.insert(oi, OpenBlock{m_nextContentIndex++, ContentBlock(), 0});
            it->block.type = BlockType::Thinking;
            if (it->block.text.isEmpty()) {
                QStringList summary;
                for (const QJsonValue &s : item.value(L("summary")).toArray())
                    summary << s.toObject().value(L("text")).toString();
                it->block.text = summary.join(QStringLiteral("\n\n"));
            }
            // The whole item is kept as the signature: only this API can take it back.
            it->block.signature = QString::fromUtf8(wire::compactJson(item));
        } else if (itemType == L("function_call") && it != m_open.end()) {
            const QString args = item.value(L("arguments")).toString();
            if (it->block.argumentsJson.isEmpty() && !args.isEmpty()) {
                StreamEvent d = event(EventType::ToolCallDelta, it->contentIndex);
                d.delta = args;
                it->block.argumentsJson = args;
                out << d;
            }
            if (it->block.toolCallId.isEmpty())
                it->block.toolCallId = item.value(L("call_id")).toString();
        } else if (itemType == L("custom_tool_call") && it != m_open.end()) {
            StreamEvent d = event(EventType::ToolCallDelta, it->contentIndex);
            d.delta = it->block.argumentsJson.isEmpty()
                          ? QString::fromUtf8(wire::compactJson(QJsonObject{{L("input"), item.value(L("input"))}}))
                          : QStringLiteral("\"}");
            it->block.argumentsJson += d.delta;
            out << d;
        }
        close(oi, out);
        return out;
    }
    if (type == L("response.completed") || type == L("response.incomplete")) {
        const QJsonObject response = data.value(L("response")).toObject();
        readUsage(response.value(L("usage")).toObject());
        closeAll(out);
        for (const QJsonValue &item : response.value(L("output")).toArray())
            m_sawToolCall |= item.toObject().value(L("type")).toString() == L("function_call") ||
                             item.toObject().value(L("type")).toString() == L("custom_tool_call");
        m_terminal = true;
        StreamEvent e = event(EventType::Done);
        e.usage = m_usage;
        e.native = response; // the whole answer as the Responses API defines it
        if (response.value(L("output")).toArray().size() < m_doneItems.size()) {
            if (m_doneItemBytes > kMaxNativeChars) {
                e.native = {}; // too large to keep whole: the canonical answer is used
            } else {
                QJsonArray items;
                for (const QJsonObject &item : std::as_const(m_doneItems))
                    items.append(item);
                e.native.insert(L("output"), items);
            }
        }
        const bool incomplete =
            type == L("response.incomplete") || response.value(L("status")).toString() == L("incomplete");
        const QString why = response.value(L("incomplete_details")).toObject().value(L("reason")).toString();
        if (incomplete && why == L("content_filter"))
            e.reason = StopReason::Refusal; // the filter answered: not an outage
        else if (incomplete)
            e.reason = StopReason::Length;
        else if (m_sawToolCall)
            e.reason = StopReason::ToolUse;
        else
            e.reason = m_sawRefusal ? StopReason::Refusal : StopReason::Stop;
        out << e;
        return out;
    }
    return out; // created, in_progress, *.done texts, annotations, built-in tool progress
}

QList<StreamEvent> OpenAIResponsesStreamDecoder::decodeFinish() {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    if (!m_pendingErrorMessage.isEmpty()) {
        out << errorEvent(m_pendingErrorCode, m_pendingErrorMessage);
        return out;
    }
    m_terminal = true;
    StreamEvent e = event(EventType::Error);
    e.reason = StopReason::Error;
    e.errorMessage = QStringLiteral("stream ended before completion");
    e.usage = m_usage;
    out << e;
    return out;
}

} // namespace sw::upstream
