#include "core/upstream/anthropic_stream_decoder.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sw::upstream {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

} // namespace

void AnthropicStreamDecoder::readUsage(const QJsonObject &usage) {
    // message_delta repeats the counts cumulatively; only the fields present are updated.
    Usage &u = m_out.usage();
    if (usage.contains(L("input_tokens")))
        u.input = usage.value(L("input_tokens")).toInteger();
    if (usage.contains(L("output_tokens")))
        u.output = usage.value(L("output_tokens")).toInteger();
    if (usage.contains(L("cache_read_input_tokens")))
        u.cacheRead = usage.value(L("cache_read_input_tokens")).toInteger();
    if (usage.contains(L("cache_creation_input_tokens")))
        u.cacheWrite = usage.value(L("cache_creation_input_tokens")).toInteger();
}

void AnthropicStreamDecoder::nativeFeed(const QString &type, const QJsonObject &data) {
    if (!m_keepNative || m_nativeOverflow)
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

void AnthropicStreamDecoder::end() {
    StopReason reason = StopReason::Stop; // end_turn, stop_sequence, pause_turn
    if (m_stopReason == L("max_tokens") || m_stopReason == L("model_context_window_exceeded"))
        reason = StopReason::Length;
    else if (m_stopReason == L("tool_use"))
        reason = StopReason::ToolUse;
    else if (m_stopReason == L("refusal"))
        reason = StopReason::Refusal; // an answer, not an outage: no mark, no failover
    m_out.done(reason, nativeMessage());
}

void AnthropicStreamDecoder::openBlock(int index, const QJsonObject &cb) {
    const QString cbType = cb.value(L("type")).toString();
    ContentBlock block;
    if (cbType == L("text")) {
        block.type = BlockType::Text;
    } else if (cbType == L("thinking")) {
        block.type = BlockType::Thinking;
    } else if (cbType == L("redacted_thinking")) {
        block.type = BlockType::Thinking;
        block.redacted = true;
        block.signature = cb.value(L("data")).toString();
    } else if (cbType == L("tool_use")) {
        block.type = BlockType::ToolCall;
        block.toolCallId = cb.value(L("id")).toString();
        block.toolName = cb.value(L("name")).toString();
    } else {
        return; // server tool blocks have no canonical form
    }
    m_out.open(index, block);
    if (cbType == L("text"))
        m_out.append(index, cb.value(L("text")).toString());
}

void AnthropicStreamDecoder::appendDelta(int index, const QJsonObject &delta) {
    const QString dType = delta.value(L("type")).toString();
    if (dType == L("text_delta"))
        m_out.append(index, delta.value(L("text")).toString());
    else if (dType == L("thinking_delta"))
        m_out.append(index, delta.value(L("thinking")).toString());
    else if (dType == L("input_json_delta"))
        m_out.append(index, delta.value(L("partial_json")).toString());
    else if (dType == L("signature_delta"))
        if (ContentBlock *b = m_out.find(index))
            b->signature += delta.value(L("signature")).toString(); // carried by ThinkingEnd
    // citations_delta and future kinds have no canonical form
}

QList<StreamEvent> AnthropicStreamDecoder::feed(const SseEvent &sse) {
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void AnthropicStreamDecoder::decode(const SseEvent &sse) {
    const QJsonObject data = QJsonDocument::fromJson(sse.data).object();
    // The payload's own type is authoritative; the event: line is the fallback.
    QString type = data.value(L("type")).toString();
    if (type.isEmpty())
        type = QString::fromUtf8(sse.event);
    if (type == L("ping") || type.isEmpty())
        return;
    nativeFeed(type, data);
    if (type == L("error")) {
        const QJsonObject err = data.value(L("error")).toObject();
        const QString errorType = err.value(L("type")).toString();
        const QString message = err.value(L("message")).toString(QString::fromUtf8(sse.data));
        m_out.fail(QStringLiteral("Anthropic stream error (%1): %2").arg(errorType, message), errorType,
                   wire::statusForAnthropicError(errorType));
        return;
    }
    if (type == L("message_start")) {
        const QJsonObject message = data.value(L("message")).toObject();
        readUsage(message.value(L("usage")).toObject());
        m_out.start(message.value(L("id")).toString());
        return;
    }
    m_out.start(); // tolerate a server that skips message_start
    const int index = data.value(L("index")).toInt(-1);
    if (type == L("content_block_start"))
        openBlock(index, data.value(L("content_block")).toObject());
    else if (type == L("content_block_delta"))
        appendDelta(index, data.value(L("delta")).toObject());
    else if (type == L("content_block_stop"))
        m_out.close(index);
    else if (type == L("message_delta")) {
        const QJsonValue stop = data.value(L("delta")).toObject().value(L("stop_reason"));
        if (stop.isString())
            m_stopReason = stop.toString();
        readUsage(data.value(L("usage")).toObject());
    } else if (type == L("message_stop")) {
        end();
    }
}

QList<StreamEvent> AnthropicStreamDecoder::finish() {
    if (!m_out.finished() && !m_stopReason.isEmpty())
        end(); // message_delta said why it stopped; only message_stop was lost
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
