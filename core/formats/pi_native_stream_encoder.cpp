#include "core/formats/pi_native_stream_encoder.h"

#include "core/formats/pi_native_codec.h"
#include "core/wire/sse.h"

namespace sw::formats {

using namespace sw::model;

namespace {
QLatin1String L(const char *s) {
    return QLatin1String(s);
}
const QByteArray kDone = QByteArrayLiteral("data: [DONE]\n\n");
} // namespace

int PiNativeStreamEncoder::position(int contentIndex) {
    const auto it = m_positionByIndex.constFind(contentIndex);
    if (it != m_positionByIndex.constEnd())
        return *it;
    const int p = int(m_positionByIndex.size());
    m_positionByIndex.insert(contentIndex, p);
    return p;
}

QByteArray PiNativeStreamEncoder::startOnce() {
    if (m_started)
        return {};
    m_started = true;
    return wire::sseFrame(QJsonObject{{L("type"), L("start")},
                                      {L("partial"), PiNativeCodec::messageJson(m_accumulator.message(), m_info)}});
}

QByteArray PiNativeStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished || event.type == EventType::Image)
        return {}; // pi's assistant messages carry no images
    if (event.type == EventType::Error) {
        const int status = event.errorStatus.value_or(500);
        m_accumulator.add(event);
        return encodeError(GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage));
    }
    QByteArray out = startOnce();
    if (event.type == EventType::Start)
        return out;
    m_accumulator.add(event);
    // Beside pi-ai's own fields, the proxy-style fields (id/toolName, contentSignature,
    // usage, errorMessage) so readers of either shape find what they need; `partial`
    // only on start, to keep long streams linear in size.
    QJsonObject o;
    const int index = event.type == EventType::Done ? -1 : position(event.contentIndex);
    switch (event.type) {
    case EventType::TextStart:
        o = {{L("type"), L("text_start")}, {L("contentIndex"), index}};
        break;
    case EventType::TextDelta:
        if (event.delta.isEmpty())
            return out;
        o = {{L("type"), L("text_delta")}, {L("contentIndex"), index}, {L("delta"), event.delta}};
        break;
    case EventType::TextEnd:
        o = {{L("type"), L("text_end")},
             {L("contentIndex"), index},
             {L("content"), m_accumulator.message().content.value(index).text}};
        break;
    case EventType::ThinkingStart:
        o = {{L("type"), L("thinking_start")}, {L("contentIndex"), index}};
        break;
    case EventType::ThinkingDelta:
        if (event.delta.isEmpty())
            return out;
        o = {{L("type"), L("thinking_delta")}, {L("contentIndex"), index}, {L("delta"), event.delta}};
        break;
    case EventType::ThinkingEnd: {
        const ContentBlock b = m_accumulator.message().content.value(index);
        o = {{L("type"), L("thinking_end")}, {L("contentIndex"), index}, {L("content"), b.text}};
        if (!b.signature.isEmpty())
            o.insert(L("contentSignature"), b.signature);
        break;
    }
    case EventType::ToolCallStart:
        o = {{L("type"), L("toolcall_start")},
             {L("contentIndex"), index},
             {L("id"), event.block.toolCallId},
             {L("toolName"), event.block.toolName}};
        break;
    case EventType::ToolCallDelta:
        if (event.delta.isEmpty())
            return out;
        o = {{L("type"), L("toolcall_delta")}, {L("contentIndex"), index}, {L("delta"), event.delta}};
        break;
    case EventType::ToolCallEnd:
        o = {{L("type"), L("toolcall_end")},
             {L("contentIndex"), index},
             {L("toolCall"), PiNativeCodec::blockJson(m_accumulator.message().content.value(index))}};
        break;
    case EventType::Done: {
        m_finished = true;
        o = {{L("type"), L("done")},
             {L("reason"), stopReasonName(event.reason)},
             {L("message"), PiNativeCodec::messageJson(m_accumulator.message(), m_info)},
             {L("usage"), PiNativeCodec::usageJson(event.usage)}};
        return out + wire::sseFrame(o) + kDone;
    }
    case EventType::Start:
    case EventType::Image:
    case EventType::Error:
        return out;
    }
    return out + wire::sseFrame(o);
}

QByteArray PiNativeStreamEncoder::encodeError(const GatewayError &error) {
    if (m_finished)
        return {};
    QByteArray out = startOnce();
    m_finished = true;
    AssistantMessage message = m_accumulator.message();
    message.stopReason = StopReason::Error;
    message.errorMessage = error.message;
    const QJsonObject o{{L("type"), L("error")},
                        {L("reason"), L("error")},
                        {L("error"), PiNativeCodec::messageJson(message, m_info)},
                        {L("errorMessage"), error.message},
                        {L("usage"), PiNativeCodec::usageJson(message.usage)}};
    // The error event ends a failed stream: [DONE] follows only a `done` event, so a
    // reader never takes a failure for a finished answer.
    return out + wire::sseFrame(o);
}

} // namespace sw::formats
