#include "core/formats/anthropic_messages_stream_encoder.h"

#include "core/formats/anthropic_messages_codec.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/tool_call_id.h"

namespace sw::formats {

using namespace sw::model;

namespace {
QLatin1String L(const char *s) {
    return QLatin1String(s);
}
} // namespace

void AnthropicMessagesStreamEncoder::messageStartOnce(wire::JsonWriter &w, const Usage &usage) {
    if (m_started)
        return;
    m_started = true;
    w.beginSseEvent("message_start")
        .beginObject()
        .field("type", "message_start")
        .key("message")
        .beginObject()
        .field("id", m_info.responseId)
        .field("type", "message")
        .field("role", "assistant")
        .field("model", m_info.model)
        .key("content")
        .beginArray()
        .endArray()
        .key("stop_reason")
        .null()
        .key("stop_sequence")
        .null()
        .key("usage");
    AnthropicMessagesCodec::writeUsage(w, usage);
    w.endObject().endObject().endSseEvent();
}

void AnthropicMessagesStreamEncoder::closeBlock(wire::JsonWriter &w) {
    if (m_openContentIndex == kNoBlock)
        return; // the signature carrier (kSignatureCarrier) is a block too: it gets its stop
    m_openContentIndex = kNoBlock;
    w.beginSseEvent("content_block_stop")
        .beginObject()
        .field("type", "content_block_stop")
        .field("index", m_nextWireIndex - 1)
        .endObject()
        .endSseEvent();
}

void AnthropicMessagesStreamEncoder::openBlock(wire::JsonWriter &w, int contentIndex, const BlockHead &head) {
    // Anthropic blocks never interleave: a new block closes the one still open.
    messageStartOnce(w, {});
    closeBlock(w);
    m_openContentIndex = contentIndex;
    m_openHadDelta = false;
    m_argumentsGate = {};
    w.beginSseEvent("content_block_start")
        .beginObject()
        .field("type", "content_block_start")
        .field("index", m_nextWireIndex++)
        .key("content_block")
        .beginObject()
        .field("type", head.type);
    if (head.type == L("text"))
        w.field("text", QString());
    else if (head.type == L("thinking"))
        w.field("thinking", QString());
    else if (head.type == L("redacted_thinking"))
        w.field("data", head.data ? *head.data : QString());
    else // tool_use
        // Another API's id, made valid and new to the conversation: the client sends it back to
        // whichever candidate answers next.
        w.field("id", AnthropicMessagesCodec::clientToolId(head.id ? *head.id : QString(), m_info.takenToolIds,
                                                           m_toolIdSuffixes))
            .field("name", head.name ? *head.name : QString())
            .key("input")
            .beginObject()
            .endObject();
    w.endObject().endObject().endSseEvent();
}

void AnthropicMessagesStreamEncoder::ensureOpen(wire::JsonWriter &w, int contentIndex, BlockType type) {
    if (m_openContentIndex == contentIndex && contentIndex >= 0)
        return;
    switch (type) {
    case BlockType::Thinking:
        openBlock(w, contentIndex, {L("thinking")});
        return;
    case BlockType::ToolCall:
        openBlock(w, contentIndex, {L("tool_use")});
        return;
    case BlockType::Text:
    case BlockType::Image:
    case BlockType::Document:
        break;
    }
    openBlock(w, contentIndex, {L("text")});
}

void AnthropicMessagesStreamEncoder::delta(wire::JsonWriter &w, QLatin1String deltaType, QLatin1String field,
                                           const QString &text) {
    m_openHadDelta = true;
    w.beginSseEvent("content_block_delta")
        .beginObject()
        .field("type", "content_block_delta")
        .field("index", m_nextWireIndex - 1)
        .key("delta")
        .beginObject()
        .field("type", deltaType)
        .field(field, text)
        .endObject()
        .endObject()
        .endSseEvent();
}

void AnthropicMessagesStreamEncoder::openThenDelta(wire::JsonWriter &w, int contentIndex, BlockType type,
                                                   QLatin1String deltaType, QLatin1String field, const QString &text) {
    // In this order: the delta's block index depends on the block ensureOpen may open.
    ensureOpen(w, contentIndex, type);
    delta(w, deltaType, field, text);
}

QByteArray AnthropicMessagesStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    wire::JsonWriter w(event.delta.size() + 384);
    switch (event.type) {
    case EventType::Start:
        messageStartOnce(w, event.usage);
        break;
    case EventType::TextStart:
        openBlock(w, event.contentIndex, {L("text")});
        break;
    case EventType::ThinkingStart:
        if (event.block.redacted)
            openBlock(w, event.contentIndex, {L("redacted_thinking"), &event.block.signature});
        else
            openBlock(w, event.contentIndex, {L("thinking")});
        break;
    case EventType::ToolCallStart: {
        if (const auto carrier = model::functionCallCarrier(event.block, m_info.upstreamApi)) {
            // Google's function-call signature, in a thinking block of its own just before the call.
            openBlock(w, kSignatureCarrier, {L("thinking")});
            delta(w, L("signature_delta"), L("signature"), *carrier);
            closeBlock(w);
        }
        openBlock(w, event.contentIndex, {L("tool_use"), nullptr, &event.block.toolCallId, &event.block.toolName});
        break;
    }
    case EventType::TextDelta:
        if (event.delta.isEmpty())
            return {};
        openThenDelta(w, event.contentIndex, BlockType::Text, L("text_delta"), L("text"), event.delta);
        break;
    case EventType::ThinkingDelta:
        if (event.delta.isEmpty())
            return {};
        openThenDelta(w, event.contentIndex, BlockType::Thinking, L("thinking_delta"), L("thinking"), event.delta);
        break;
    case EventType::ToolCallDelta: {
        if (event.delta.isEmpty())
            return {};
        ensureOpen(w, event.contentIndex, BlockType::ToolCall);
        // Arguments that are not an object (`["Paris", 2]`) are held: the SDK's input would be
        // that, and Anthropic refuses it in the next turn. The block keeps its start's {}.
        const QString json = m_argumentsGate.pass(event.delta);
        if (!json.isEmpty())
            delta(w, L("input_json_delta"), L("partial_json"), json);
        break;
    }
    case EventType::TextEnd:
        if (event.contentIndex == m_openContentIndex)
            closeBlock(w);
        break;
    case EventType::ThinkingEnd: {
        if (event.contentIndex != m_openContentIndex)
            return {};
        // The signature travels as the block's last delta, before content_block_stop.
        const QString signature = AnthropicMessagesCodec::signatureFor(event.block, m_info.upstreamApi);
        if (!event.block.redacted && !signature.isEmpty())
            delta(w, L("signature_delta"), L("signature"), signature);
        closeBlock(w);
        break;
    }
    case EventType::ToolCallEnd: {
        if (event.contentIndex != m_openContentIndex)
            return {};
        if (!m_openHadDelta && !event.block.arguments.isEmpty()) // upstream gave the arguments whole
            delta(w, L("input_json_delta"), L("partial_json"),
                  QString::fromUtf8(wire::compactJson(event.block.arguments)));
        closeBlock(w);
        break;
    }
    case EventType::Image:
        return {};
    case EventType::Done: {
        m_finished = true;
        messageStartOnce(w, {});
        closeBlock(w);
        w.beginSseEvent("message_delta").beginObject().field("type", "message_delta").key("delta").beginObject();
        AnthropicMessagesCodec::writeStop(w, event.reason, event.stopSequence);
        w.endObject().key("usage");
        AnthropicMessagesCodec::writeUsage(w, event.usage);
        w.endObject().endSseEvent();
        w.beginSseEvent("message_stop").beginObject().field("type", "message_stop").endObject().endSseEvent();
        break;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    }
    return w.take();
}

QByteArray AnthropicMessagesStreamEncoder::encodeError(const GatewayError &error) {
    m_finished = true;
    wire::JsonWriter w(128 + error.message.size());
    w.beginSseEvent("error");
    AnthropicMessagesCodec::writeError(w, error, true);
    w.endSseEvent();
    return w.take();
}

} // namespace sw::formats
