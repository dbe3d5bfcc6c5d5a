#include "upstream/anthropic_stream_decoder.h"

#include "model/event_accumulator.h"

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

} // namespace

void AnthropicStreamDecoder::readUsage(const QJsonObject &usage) {
    // message_delta repeats the counts cumulatively; only the fields present are updated.
    if (usage.contains(L("input_tokens")))
        m_usage.input = usage.value(L("input_tokens")).toInteger();
    if (usage.contains(L("output_tokens")))
        m_usage.output = usage.value(L("output_tokens")).toInteger();
    if (usage.contains(L("cache_read_input_tokens")))
        m_usage.cacheRead = usage.value(L("cache_read_input_tokens")).toInteger();
    if (usage.contains(L("cache_creation_input_tokens")))
        m_usage.cacheWrite = usage.value(L("cache_creation_input_tokens")).toInteger();
}

StreamEvent AnthropicStreamDecoder::endEvent(const OpenBlock &open) const {
    EventType type = EventType::TextEnd;
    if (open.block.type == BlockType::Thinking)
        type = EventType::ThinkingEnd;
    else if (open.block.type == BlockType::ToolCall)
        type = EventType::ToolCallEnd;
    StreamEvent e = event(type, open.contentIndex);
    e.block = open.block;
    if (type == EventType::ToolCallEnd)
        e.block.arguments = parseToolArguments(e.block.argumentsJson);
    return e;
}

void AnthropicStreamDecoder::closeAll(QList<StreamEvent> &out) {
    QList<int> keys = m_open.keys();
    std::sort(keys.begin(), keys.end());
    for (int k : keys)
        out << endEvent(m_open.value(k));
    m_open.clear();
}

void AnthropicStreamDecoder::nativeFeed(const QString &type, const QJsonObject &data) {
    if (m_nativeOverflow)
        return;
    const int index = data.value(L("index")).toInt(-1);
    if (type == L("message_start")) {
        m_nativeMessage = data.value(L("message")).toObject();
    } else if (type == L("content_block_start")) {
        NativeBlock b;
        b.block = data.value(L("content_block")).toObject();
        b.text =
            b.block.value(b.block.value(L("type")).toString() == L("thinking") ? L("thinking") : L("text")).toString();
        b.signature = b.block.value(L("signature")).toString();
        m_nativeBlocks.insert(index, b);
    } else if (type == L("content_block_delta")) {
        auto it = m_nativeBlocks.find(index);
        if (it == m_nativeBlocks.end())
            return;
        const QJsonObject delta = data.value(L("delta")).toObject();
        const QString dType = delta.value(L("type")).toString();
        QString piece;
        if (dType == L("text_delta")) {
            piece = delta.value(L("text")).toString();
            it->text += piece;
        } else if (dType == L("thinking_delta")) {
            piece = delta.value(L("thinking")).toString();
            it->text += piece;
        } else if (dType == L("input_json_delta")) {
            piece = delta.value(L("partial_json")).toString();
            it->partialJson += piece;
        } else if (dType == L("signature_delta")) {
            piece = delta.value(L("signature")).toString();
            it->signature += piece;
        } else if (dType == L("citations_delta")) {
            QJsonArray citations = it->block.value(L("citations")).toArray();
            citations.append(delta.value(L("citation")));
            it->block.insert(L("citations"), citations);
            piece = QString::number(citations.size()); // counted roughly: citations are small
        }
        m_nativeChars += piece.size();
        if (m_nativeChars > kMaxNativeChars) {
            m_nativeOverflow = true;
            m_nativeBlocks.clear();
        }
    } else if (type == L("message_delta")) {
        const QJsonObject delta = data.value(L("delta")).toObject();
        for (auto it = delta.begin(); it != delta.end(); ++it)
            m_nativeMessage.insert(it.key(), it.value()); // stop_reason, stop_sequence, container
        QJsonObject usage = m_nativeMessage.value(L("usage")).toObject();
        const QJsonObject more = data.value(L("usage")).toObject();
        for (auto it = more.begin(); it != more.end(); ++it)
            if (!it.value().isNull())
                usage.insert(it.key(), it.value()); // cumulative: output_tokens, server_tool_use, …
        m_nativeMessage.insert(L("usage"), usage);
    }
}

QJsonObject AnthropicStreamDecoder::nativeMessage() const {
    if (m_nativeOverflow || m_nativeMessage.isEmpty())
        return {};
    QJsonObject message = m_nativeMessage;
    QJsonArray content;
    for (const NativeBlock &n : m_nativeBlocks) {
        QJsonObject b = n.block;
        const QString type = b.value(L("type")).toString();
        if (type == L("text")) {
            b.insert(L("text"), n.text);
        } else if (type == L("thinking")) {
            b.insert(L("thinking"), n.text);
            b.insert(L("signature"), n.signature);
        } else if (b.contains(L("input"))) { // tool_use, server_tool_use, mcp_tool_use
            if (!n.partialJson.trimmed().isEmpty())
                b.insert(L("input"), QJsonDocument::fromJson(n.partialJson.toUtf8()).object());
        }
        content.append(b);
    }
    message.insert(L("content"), content);
    return message;
}

StreamEvent AnthropicStreamDecoder::terminalEvent() {
    m_terminal = true;
    StreamEvent e = event(EventType::Done);
    e.usage = m_usage;
    e.native = nativeMessage();
    if (m_stopReason == L("max_tokens") || m_stopReason == L("model_context_window_exceeded"))
        e.reason = StopReason::Length;
    else if (m_stopReason == L("tool_use"))
        e.reason = StopReason::ToolUse;
    else if (m_stopReason == L("refusal"))
        e.reason = StopReason::Refusal; // an answer, not an outage: no mark, no failover
    else
        e.reason = StopReason::Stop; // end_turn, stop_sequence, pause_turn
    return e;
}

QList<StreamEvent> AnthropicStreamDecoder::feed(const SseEvent &sse) {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    const QJsonObject data = QJsonDocument::fromJson(sse.data).object();
    // The payload's own type is authoritative; the event: line is the fallback.
    QString type = data.value(L("type")).toString();
    if (type.isEmpty())
        type = QString::fromUtf8(sse.event);

    if (type == L("ping") || type.isEmpty())
        return out;
    nativeFeed(type, data);
    if (type == L("error")) {
        const QJsonObject err = data.value(L("error")).toObject();
        StreamEvent e = event(EventType::Error);
        e.reason = StopReason::Error;
        e.errorType = err.value(L("type")).toString();
        const QString message = err.value(L("message")).toString(QString::fromUtf8(sse.data));
        e.errorMessage = QStringLiteral("Anthropic stream error (%1): %2").arg(e.errorType, message);
        e.errorStatus = wire::statusForAnthropicError(e.errorType);
        e.usage = m_usage;
        m_terminal = true;
        out << e;
        return out;
    }
    if (type == L("message_start")) {
        readUsage(data.value(L("message")).toObject().value(L("usage")).toObject());
        if (!m_started) {
            m_started = true;
            StreamEvent e = event(EventType::Start);
            e.usage = m_usage;
            e.responseId = data.value(L("message")).toObject().value(L("id")).toString();
            out << e;
        }
        return out;
    }
    if (!m_started) { // tolerate a server that skips message_start
        m_started = true;
        out << event(EventType::Start);
    }
    const int index = data.value(L("index")).toInt(-1);
    if (type == L("content_block_start")) {
        const QJsonObject cb = data.value(L("content_block")).toObject();
        const QString cbType = cb.value(L("type")).toString();
        OpenBlock open;
        EventType startType;
        if (cbType == L("text")) {
            startType = EventType::TextStart;
            open.block.type = BlockType::Text;
        } else if (cbType == L("thinking")) {
            startType = EventType::ThinkingStart;
            open.block.type = BlockType::Thinking;
        } else if (cbType == L("redacted_thinking")) {
            startType = EventType::ThinkingStart;
            open.block.type = BlockType::Thinking;
            open.block.redacted = true;
            open.block.signature = cb.value(L("data")).toString();
        } else if (cbType == L("tool_use")) {
            startType = EventType::ToolCallStart;
            open.block.type = BlockType::ToolCall;
            open.block.toolCallId = cb.value(L("id")).toString();
            open.block.toolName = cb.value(L("name")).toString();
        } else {
            return out; // server tool blocks have no canonical form
        }
        open.contentIndex = m_nextContentIndex++;
        StreamEvent e = event(startType, open.contentIndex);
        e.block = open.block;
        out << e;
        const QString initialText = cb.value(L("text")).toString();
        if (cbType == L("text") && !initialText.isEmpty()) {
            open.block.text = initialText;
            StreamEvent d = event(EventType::TextDelta, open.contentIndex);
            d.delta = initialText;
            out << d;
        }
        m_open.insert(index, open);
        return out;
    }
    if (type == L("content_block_delta")) {
        auto it = m_open.find(index);
        if (it == m_open.end())
            return out;
        const QJsonObject delta = data.value(L("delta")).toObject();
        const QString dType = delta.value(L("type")).toString();
        StreamEvent e = event(EventType::TextDelta, it->contentIndex);
        if (dType == L("text_delta")) {
            e.delta = delta.value(L("text")).toString();
            it->block.text += e.delta;
        } else if (dType == L("thinking_delta")) {
            e.type = EventType::ThinkingDelta;
            e.delta = delta.value(L("thinking")).toString();
            it->block.text += e.delta;
        } else if (dType == L("input_json_delta")) {
            e.type = EventType::ToolCallDelta;
            e.delta = delta.value(L("partial_json")).toString();
            it->block.argumentsJson += e.delta;
        } else if (dType == L("signature_delta")) {
            it->block.signature += delta.value(L("signature")).toString();
            return out; // carried by ThinkingEnd
        } else {
            return out; // citations_delta and future kinds
        }
        if (!e.delta.isEmpty())
            out << e;
        return out;
    }
    if (type == L("content_block_stop")) {
        const auto it = m_open.constFind(index);
        if (it != m_open.constEnd()) {
            out << endEvent(*it);
            m_open.erase(it);
        }
        return out;
    }
    if (type == L("message_delta")) {
        const QJsonValue stop = data.value(L("delta")).toObject().value(L("stop_reason"));
        if (stop.isString())
            m_stopReason = stop.toString();
        readUsage(data.value(L("usage")).toObject());
        return out;
    }
    if (type == L("message_stop")) {
        closeAll(out);
        out << terminalEvent();
        return out;
    }
    return out;
}

QList<StreamEvent> AnthropicStreamDecoder::finish() {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    if (!m_stopReason.isEmpty()) { // message_delta said why it stopped; only message_stop was lost
        closeAll(out);
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
