#include "core/formats/anthropic_messages_stream_encoder.h"

#include "core/formats/anthropic_messages_codec.h"
#include "core/wire/json.h"
#include "core/wire/sse.h"

#include <QJsonArray>

namespace sw::formats {

using namespace sw::model;

namespace {
QLatin1String L(const char *s) {
    return QLatin1String(s);
}
} // namespace

QByteArray AnthropicMessagesStreamEncoder::messageStartOnce(const Usage &usage) {
    if (m_started)
        return {};
    m_started = true;
    const QJsonObject message{{L("id"), m_info.responseId},
                              {L("type"), L("message")},
                              {L("role"), L("assistant")},
                              {L("model"), m_info.model},
                              {L("content"), QJsonArray()},
                              {L("stop_reason"), QJsonValue::Null},
                              {L("stop_sequence"), QJsonValue::Null},
                              {L("usage"), AnthropicMessagesCodec::usageJson(usage)}};
    return wire::sseFrame(QJsonObject{{L("type"), L("message_start")}, {L("message"), message}}, "message_start");
}

QByteArray AnthropicMessagesStreamEncoder::closeBlock() {
    if (m_openContentIndex < 0)
        return {};
    m_openContentIndex = -1;
    return wire::sseFrame(QJsonObject{{L("type"), L("content_block_stop")}, {L("index"), m_nextWireIndex - 1}},
                          "content_block_stop");
}

QByteArray AnthropicMessagesStreamEncoder::openBlock(int contentIndex, const QJsonObject &contentBlock) {
    // Anthropic blocks never interleave: a new block closes the one still open.
    QByteArray out = messageStartOnce({}) + closeBlock();
    m_openContentIndex = contentIndex;
    m_openHadDelta = false;
    out += wire::sseFrame(QJsonObject{{L("type"), L("content_block_start")},
                                      {L("index"), m_nextWireIndex++},
                                      {L("content_block"), contentBlock}},
                          "content_block_start");
    return out;
}

QByteArray AnthropicMessagesStreamEncoder::ensureOpen(int contentIndex, BlockType type) {
    if (m_openContentIndex == contentIndex && contentIndex >= 0)
        return {};
    switch (type) {
    case BlockType::Thinking:
        return openBlock(contentIndex, QJsonObject{{L("type"), L("thinking")}, {L("thinking"), QString()}});
    case BlockType::ToolCall:
        return openBlock(contentIndex, QJsonObject{{L("type"), L("tool_use")},
                                                   {L("id"), QString()},
                                                   {L("name"), QString()},
                                                   {L("input"), QJsonObject()}});
    case BlockType::Text:
    case BlockType::Image:
        break;
    }
    return openBlock(contentIndex, QJsonObject{{L("type"), L("text")}, {L("text"), QString()}});
}

QByteArray AnthropicMessagesStreamEncoder::delta(const QJsonObject &delta) {
    m_openHadDelta = true;
    return wire::sseFrame(
        QJsonObject{{L("type"), L("content_block_delta")}, {L("index"), m_nextWireIndex - 1}, {L("delta"), delta}},
        "content_block_delta");
}

QByteArray AnthropicMessagesStreamEncoder::openThenDelta(int contentIndex, model::BlockType type,
                                                         const QJsonObject &payload) {
    // Two statements: the delta's block index depends on the block ensureOpen may open.
    QByteArray out = ensureOpen(contentIndex, type);
    out += delta(payload);
    return out;
}

QByteArray AnthropicMessagesStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    switch (event.type) {
    case EventType::Start:
        return messageStartOnce(event.usage);
    case EventType::TextStart:
        return openBlock(event.contentIndex, QJsonObject{{L("type"), L("text")}, {L("text"), QString()}});
    case EventType::ThinkingStart:
        if (event.block.redacted)
            return openBlock(event.contentIndex,
                             QJsonObject{{L("type"), L("redacted_thinking")}, {L("data"), event.block.signature}});
        return openBlock(event.contentIndex, QJsonObject{{L("type"), L("thinking")}, {L("thinking"), QString()}});
    case EventType::ToolCallStart: {
        QByteArray out;
        if (const auto carrier = AnthropicMessagesCodec::functionCallSignatureBlock(event.block, m_info.upstreamApi)) {
            // Google's function-call signature, in a thinking block of its own just before the call.
            out += openBlock(-2, QJsonObject{{L("type"), L("thinking")}, {L("thinking"), QString()}});
            out +=
                delta(QJsonObject{{L("type"), L("signature_delta")}, {L("signature"), carrier->value(L("signature"))}});
            out += closeBlock();
        }
        return out + openBlock(event.contentIndex, QJsonObject{{L("type"), L("tool_use")},
                                                               {L("id"), event.block.toolCallId},
                                                               {L("name"), event.block.toolName},
                                                               {L("input"), QJsonObject()}});
    }
    case EventType::TextDelta:
        if (event.delta.isEmpty())
            return {};
        return openThenDelta(event.contentIndex, BlockType::Text,
                             QJsonObject{{L("type"), L("text_delta")}, {L("text"), event.delta}});
    case EventType::ThinkingDelta:
        if (event.delta.isEmpty())
            return {};
        return openThenDelta(event.contentIndex, BlockType::Thinking,
                             QJsonObject{{L("type"), L("thinking_delta")}, {L("thinking"), event.delta}});
    case EventType::ToolCallDelta:
        if (event.delta.isEmpty())
            return {};
        return openThenDelta(event.contentIndex, BlockType::ToolCall,
                             QJsonObject{{L("type"), L("input_json_delta")}, {L("partial_json"), event.delta}});
    case EventType::TextEnd:
        return event.contentIndex == m_openContentIndex ? closeBlock() : QByteArray();
    case EventType::ThinkingEnd: {
        if (event.contentIndex != m_openContentIndex)
            return {};
        QByteArray out;
        // The signature travels as the block's last delta, before content_block_stop.
        const QString signature = AnthropicMessagesCodec::signatureFor(event.block, m_info.upstreamApi);
        if (!event.block.redacted && !signature.isEmpty())
            out += delta(QJsonObject{{L("type"), L("signature_delta")}, {L("signature"), signature}});
        return out + closeBlock();
    }
    case EventType::ToolCallEnd: {
        if (event.contentIndex != m_openContentIndex)
            return {};
        QByteArray out;
        if (!m_openHadDelta && !event.block.arguments.isEmpty()) // upstream gave the arguments whole
            out += delta(QJsonObject{{L("type"), L("input_json_delta")},
                                     {L("partial_json"), QString::fromUtf8(wire::compactJson(event.block.arguments))}});
        return out + closeBlock();
    }
    case EventType::Image:
        return {};
    case EventType::Done: {
        m_finished = true;
        QByteArray out = messageStartOnce({}) + closeBlock();
        out += wire::sseFrame(
            QJsonObject{
                {L("type"), L("message_delta")},
                {L("delta"), QJsonObject{{L("stop_reason"), AnthropicMessagesCodec::stopReasonName(event.reason)},
                                         {L("stop_sequence"), QJsonValue::Null}}},
                {L("usage"), AnthropicMessagesCodec::usageJson(event.usage)}},
            "message_delta");
        out += wire::sseFrame(QJsonObject{{L("type"), L("message_stop")}}, "message_stop");
        return out;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    }
    return {};
}

QByteArray AnthropicMessagesStreamEncoder::encodeError(const GatewayError &error) {
    m_finished = true;
    return wire::sseFrame(AnthropicMessagesCodec::errorJson(error), "error");
}

} // namespace sw::formats
