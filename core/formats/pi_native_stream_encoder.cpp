#include "core/formats/pi_native_stream_encoder.h"

#include "core/formats/pi_native_codec.h"
#include "core/wire/json_writer.h"

namespace sw::formats {

using namespace sw::model;

int PiNativeStreamEncoder::position(int contentIndex) {
    const auto it = m_positionByIndex.constFind(contentIndex);
    if (it != m_positionByIndex.constEnd())
        return *it;
    const int p = int(m_positionByIndex.size());
    m_positionByIndex.insert(contentIndex, p);
    return p;
}

void PiNativeStreamEncoder::startOnce(wire::JsonWriter &w) {
    if (m_started)
        return;
    m_started = true;
    w.beginSseEvent().beginObject().field("type", "start").key("partial");
    PiNativeCodec::writeMessage(w, m_accumulator.message(), m_info);
    w.endObject().endSseEvent();
}

QByteArray PiNativeStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished || event.type == EventType::Image)
        return {}; // pi's assistant messages carry no images
    if (event.type == EventType::Error) {
        const int status = event.errorStatus.value_or(500);
        m_accumulator.add(event);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    wire::JsonWriter w(event.delta.size() + 256);
    startOnce(w);
    if (event.type == EventType::Start)
        return w.take();
    m_accumulator.add(event);
    if (event.type == EventType::Done && event.reason == StopReason::Refusal) {
        // pi has no refusal reason: pi-ai ends a refusal (Anthropic refusal, Chat content_filter,
        // Google SAFETY) as an error, so an agent never takes it for a finished turn. The content
        // streamed so far stays in the message.
        writeFailure(w, m_accumulator.message(), PiNativeCodec::refusalMessage(m_accumulator.message()));
        return w.take();
    }
    // Beside pi-ai's own fields, the proxy-style fields (id/toolName, contentSignature,
    // usage, errorMessage) so readers of either shape find what they need; `partial`
    // only on start, to keep long streams linear in size.
    const int index = event.type == EventType::Done ? -1 : position(event.contentIndex);
    // Arguments that are not an object are held, as on the Anthropic route: pi's stream proxy
    // builds the call from the deltas, and the call ends with toolcall_end's {}.
    const QString delta =
        event.type == EventType::ToolCallDelta ? m_argumentsGates[event.contentIndex].pass(event.delta) : event.delta;
    if (delta.isEmpty() && (event.type == EventType::TextDelta || event.type == EventType::ThinkingDelta ||
                            event.type == EventType::ToolCallDelta))
        return w.take();
    w.beginSseEvent().beginObject();
    switch (event.type) {
    case EventType::TextStart:
        w.field("type", "text_start").field("contentIndex", index);
        break;
    case EventType::TextDelta:
        w.field("type", "text_delta").field("contentIndex", index).field("delta", event.delta);
        break;
    case EventType::TextEnd: {
        const ContentBlock &text = m_accumulator.message().content.value(index);
        w.field("type", "text_end").field("contentIndex", index).field("content", text.text);
        // pi's stream proxy takes a text's signature from here (a Responses message id).
        if (const QString signature = PiNativeCodec::textSignatureFor(text); !signature.isEmpty())
            w.field("contentSignature", signature);
        break;
    }
    case EventType::ThinkingStart:
        w.field("type", "thinking_start").field("contentIndex", index);
        break;
    case EventType::ThinkingDelta:
        w.field("type", "thinking_delta").field("contentIndex", index).field("delta", event.delta);
        break;
    case EventType::ThinkingEnd: {
        const ContentBlock b = m_accumulator.message().content.value(index);
        w.field("type", "thinking_end").field("contentIndex", index).field("content", b.text);
        // pi's stream proxy keeps only this of the block: a redacted one's payload goes tagged,
        // so it comes back as redacted_thinking, not as a thinking block Anthropic refuses.
        const QString api = m_accumulator.message().api.isEmpty() ? m_info.upstreamApi : m_accumulator.message().api;
        if (const QString signature = PiNativeCodec::contentSignatureFor(b, api, m_info.clientApi);
            !signature.isEmpty())
            w.field("contentSignature", signature);
        break;
    }
    case EventType::ToolCallStart:
        w.field("type", "toolcall_start")
            .field("contentIndex", index)
            .field("id", PiNativeCodec::toolCallIdFor(event.block))
            .field("toolName", event.block.toolName);
        break;
    case EventType::ToolCallDelta:
        w.field("type", "toolcall_delta").field("contentIndex", index).field("delta", delta);
        break;
    case EventType::ToolCallEnd:
        w.field("type", "toolcall_end").field("contentIndex", index).key("toolCall");
        PiNativeCodec::writeBlock(w, m_accumulator.message().content.value(index),
                                  m_accumulator.message().api.isEmpty() ? m_info.upstreamApi
                                                                        : m_accumulator.message().api);
        break;
    case EventType::Done:
        m_finished = true;
        w.field("type", "done").field("reason", stopReasonName(event.reason)).key("message");
        PiNativeCodec::writeMessage(w, m_accumulator.message(), m_info);
        w.key("usage");
        PiNativeCodec::writeUsage(w, event.usage, m_info);
        w.endObject().endSseEvent().appendRaw("data: [DONE]\n\n");
        return w.take();
    case EventType::Start:
    case EventType::Image:
    case EventType::Error:
        break;
    }
    w.endObject().endSseEvent();
    return w.take();
}

QByteArray PiNativeStreamEncoder::encodeError(const GatewayError &error) {
    if (m_finished)
        return {};
    wire::JsonWriter w(1024);
    writeFailure(w, m_accumulator.message(), error.message);
    return w.take();
}

void PiNativeStreamEncoder::writeFailure(wire::JsonWriter &w, AssistantMessage message, const QString &errorMessage) {
    startOnce(w);
    m_finished = true;
    message.stopReason = StopReason::Error;
    message.errorMessage = errorMessage;
    w.beginSseEvent().beginObject().field("type", "error").field("reason", "error").key("error");
    PiNativeCodec::writeMessage(w, message, m_info);
    w.field("errorMessage", errorMessage).key("usage");
    PiNativeCodec::writeUsage(w, message.usage, m_info);
    // The error event ends a failed stream: [DONE] follows only a `done` event, so a
    // reader never takes a failure for a finished answer.
    w.endObject().endSseEvent();
}

} // namespace sw::formats
