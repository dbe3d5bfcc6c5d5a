#include "upstream/google_stream_decoder.h"

#include "wire/json.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUuid>

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

} // namespace

void GoogleStreamDecoder::closeBlock(QList<StreamEvent> &out) {
    if (!m_open)
        return;
    StreamEvent e =
        event(m_open->second.type == BlockType::Thinking ? EventType::ThinkingEnd : EventType::TextEnd, m_open->first);
    e.block = m_open->second;
    out << e;
    m_open.reset();
}

StreamEvent GoogleStreamDecoder::terminalEvent() {
    m_terminal = true;
    if (m_finishReason == L("STOP") || m_finishReason == L("MAX_TOKENS") || m_finishReason.isEmpty() ||
        m_finishReason == L("FINISH_REASON_UNSPECIFIED")) {
        StreamEvent e = event(EventType::Done);
        e.usage = m_usage;
        e.reason = m_finishReason == L("MAX_TOKENS") ? StopReason::Length
                   : m_toolCalls > 0                 ? StopReason::ToolUse
                                                     : StopReason::Stop;
        return e;
    }
    // A safety stop (or a blocked prompt, promptFeedback.blockReason) is Google's refusal:
    // a completed answer, never an outage.
    static const QStringList refusals{QStringLiteral("SAFETY"),
                                      QStringLiteral("RECITATION"),
                                      QStringLiteral("BLOCKLIST"),
                                      QStringLiteral("PROHIBITED_CONTENT"),
                                      QStringLiteral("SPII"),
                                      QStringLiteral("IMAGE_SAFETY"),
                                      QStringLiteral("IMAGE_PROHIBITED_CONTENT")};
    if (refusals.contains(m_finishReason)) {
        StreamEvent e = event(EventType::Done);
        e.usage = m_usage;
        e.reason = StopReason::Refusal;
        return e;
    }
    // MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, ...: the model failed to answer.
    StreamEvent e = event(EventType::Error);
    e.reason = StopReason::Error;
    e.errorMessage = QStringLiteral("Google stopped the answer (finishReason %1)").arg(m_finishReason);
    e.usage = m_usage;
    return e;
}

QList<StreamEvent> GoogleStreamDecoder::feed(const SseEvent &sse) {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    const QByteArray raw = sse.data.trimmed();
    if (raw.isEmpty())
        return out;
    const QJsonDocument doc = QJsonDocument::fromJson(raw);
    const QJsonObject chunk = doc.isArray() ? doc.array().at(0).toObject() : doc.object();
    if (chunk.value(L("error")).isObject()) {
        const QJsonObject err = chunk.value(L("error")).toObject();
        StreamEvent e = event(EventType::Error);
        e.reason = StopReason::Error;
        e.errorType = err.value(L("status")).toString();
        e.errorMessage =
            QStringLiteral("Google stream error (%1): %2").arg(e.errorType, err.value(L("message")).toString());
        const int code = err.value(L("code")).toInt();
        e.errorStatus = code >= 400 ? std::optional<int>(code) : wire::statusForGoogleStatus(e.errorType);
        e.usage = m_usage;
        m_terminal = true;
        out << e;
        return out;
    }
    if (chunk.isEmpty())
        return out;
    if (!m_started) {
        m_started = true;
        out << event(EventType::Start);
    }
    const QJsonObject usage = chunk.value(L("usageMetadata")).toObject();
    if (!usage.isEmpty()) {
        const qint64 cached = usage.value(L("cachedContentTokenCount")).toInteger();
        m_usage.input = qMax<qint64>(0, usage.value(L("promptTokenCount")).toInteger() - cached);
        m_usage.cacheRead = cached;
        m_usage.output =
            usage.value(L("candidatesTokenCount")).toInteger() + usage.value(L("thoughtsTokenCount")).toInteger();
    }
    const QJsonArray candidates = chunk.value(L("candidates")).toArray();
    if (candidates.isEmpty()) {
        const QString blocked = chunk.value(L("promptFeedback")).toObject().value(L("blockReason")).toString();
        if (!blocked.isEmpty())
            m_finishReason = blocked;
        return out;
    }
    const QJsonObject candidate = candidates.first().toObject();
    for (const QJsonValue &pv : candidate.value(L("content")).toObject().value(L("parts")).toArray()) {
        const QJsonObject part = pv.toObject();
        const QString signature = part.value(L("thoughtSignature")).toString();
        if (part.contains(L("functionCall"))) {
            closeBlock(out);
            const QJsonObject fc = part.value(L("functionCall")).toObject();
            ContentBlock b;
            b.type = BlockType::ToolCall;
            b.toolName = fc.value(L("name")).toString();
            // Google gives no call id (or one only on some models): one is made up, unique per call.
            b.toolCallId = fc.value(L("id")).toString();
            if (b.toolCallId.isEmpty())
                b.toolCallId = QStringLiteral("call_") + QUuid::createUuid().toString(QUuid::Id128).left(24);
            b.arguments = fc.value(L("args")).toObject();
            b.argumentsJson = QString::fromUtf8(wire::compactJson(b.arguments));
            b.signature = signature;
            const int index = m_nextContentIndex++;
            ++m_toolCalls;
            StreamEvent s = event(EventType::ToolCallStart, index);
            s.block = b;
            s.block.arguments = {};
            s.block.argumentsJson.clear(); // the arguments follow as the delta
            out << s;
            StreamEvent d = event(EventType::ToolCallDelta, index);
            d.delta = b.argumentsJson;
            out << d;
            StreamEvent e = event(EventType::ToolCallEnd, index);
            e.block = b;
            out << e;
            continue;
        }
        if (!part.contains(L("text")))
            continue; // executableCode, inlineData output...: no canonical form in an answer
        const BlockType type = part.value(L("thought")).toBool() ? BlockType::Thinking : BlockType::Text;
        const QString text = part.value(L("text")).toString();
        if (!m_open || m_open->second.type != type) {
            if (text.isEmpty() && signature.isEmpty())
                continue; // an empty closing part opens nothing
            closeBlock(out);
            ContentBlock b;
            b.type = type;
            m_open = std::make_pair(m_nextContentIndex++, b);
            StreamEvent s =
                event(type == BlockType::Thinking ? EventType::ThinkingStart : EventType::TextStart, m_open->first);
            s.block = b;
            out << s;
        }
        if (!signature.isEmpty())
            m_open->second.signature = signature;
        if (!text.isEmpty()) {
            m_open->second.text += text;
            StreamEvent d =
                event(type == BlockType::Thinking ? EventType::ThinkingDelta : EventType::TextDelta, m_open->first);
            d.delta = text;
            out << d;
        }
    }
    const QString finish = candidate.value(L("finishReason")).toString();
    if (!finish.isEmpty())
        m_finishReason = finish;
    return out;
}

QList<StreamEvent> GoogleStreamDecoder::finish() {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    closeBlock(out);
    if (!m_finishReason.isEmpty()) {
        out << terminalEvent();
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
