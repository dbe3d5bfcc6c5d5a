#include "core/formats/openai_chat_stream_encoder.h"

#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
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

QByteArray OpenAIChatStreamEncoder::chunk(const QJsonObject &delta, const QJsonValue &finishReason) {
    const QJsonObject choice{{L("index"), 0}, {L("delta"), delta}, {L("finish_reason"), finishReason}};
    return wire::sseFrame(QJsonObject{{L("id"), m_info.responseId},
                                      {L("object"), L("chat.completion.chunk")},
                                      {L("created"), m_info.createdSecs},
                                      {L("model"), m_info.model},
                                      {L("choices"), QJsonArray{choice}}});
}

QByteArray OpenAIChatStreamEncoder::roleChunkOnce() {
    if (m_sentRole)
        return {};
    m_sentRole = true;
    return chunk(QJsonObject{{L("role"), L("assistant")}, {L("content"), QString()}});
}

QByteArray OpenAIChatStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    switch (event.type) {
    case EventType::Start:
        return roleChunkOnce();
    case EventType::TextDelta:
        if (event.delta.isEmpty())
            return {};
        return roleChunkOnce() + chunk(QJsonObject{{L("content"), event.delta}});
    case EventType::ThinkingDelta:
        // reasoning_content is what DeepSeek, vLLM and most OpenAI-compatible clients read.
        if (event.delta.isEmpty())
            return {};
        return roleChunkOnce() + chunk(QJsonObject{{L("reasoning_content"), event.delta}});
    case EventType::ToolCallStart: {
        const int index = int(m_toolIndexByContentIndex.size());
        m_toolIndexByContentIndex.insert(event.contentIndex, index);
        if (m_info.customTools.contains(event.block.toolName)) {
            // A custom tool's call: its input is text, sent whole when the call ends.
            m_customCalls.insert(event.contentIndex, event.block);
            return roleChunkOnce();
        }
        const QJsonObject call{
            {L("index"), index},
            {L("id"), event.block.toolCallId},
            {L("type"), L("function")},
            {L("function"), QJsonObject{{L("name"), event.block.toolName}, {L("arguments"), QString()}}}};
        return roleChunkOnce() + chunk(QJsonObject{{L("tool_calls"), QJsonArray{call}}});
    }
    case EventType::ToolCallDelta: {
        if (event.delta.isEmpty())
            return {};
        const auto it = m_toolIndexByContentIndex.constFind(event.contentIndex);
        if (it == m_toolIndexByContentIndex.constEnd())
            return {}; // a delta without its start has no id to attach to
        if (m_customCalls.contains(event.contentIndex)) {
            m_customCalls[event.contentIndex].argumentsJson += event.delta;
            return {};
        }
        m_toolsWithArguments.insert(event.contentIndex);
        const QJsonObject call{{L("index"), *it}, {L("function"), QJsonObject{{L("arguments"), event.delta}}}};
        return chunk(QJsonObject{{L("tool_calls"), QJsonArray{call}}});
    }
    case EventType::ToolCallEnd: {
        // A call with no streamed arguments (a tool without parameters) still gets "{}",
        // as OpenAI sends it: clients JSON.parse the arguments string.
        const auto it = m_toolIndexByContentIndex.constFind(event.contentIndex);
        if (it != m_toolIndexByContentIndex.constEnd() && m_customCalls.contains(event.contentIndex)) {
            ContentBlock call = m_customCalls.take(event.contentIndex);
            if (!event.block.arguments.isEmpty())
                call.arguments = event.block.arguments;
            const QJsonObject custom{{L("index"), *it},
                                     {L("id"), call.toolCallId},
                                     {L("type"), L("custom")},
                                     {L("custom"), QJsonObject{{L("name"), call.toolName},
                                                               {L("input"), OpenAIResponsesCodec::customInput(call)}}}};
            return chunk(QJsonObject{{L("tool_calls"), QJsonArray{custom}}});
        }
        if (it == m_toolIndexByContentIndex.constEnd() || m_toolsWithArguments.contains(event.contentIndex))
            return {};
        m_toolsWithArguments.insert(event.contentIndex);
        const QJsonObject call{
            {L("index"), *it},
            {L("function"),
             QJsonObject{{L("arguments"), QString::fromUtf8(wire::compactJson(event.block.arguments))}}}};
        return chunk(QJsonObject{{L("tool_calls"), QJsonArray{call}}});
    }
    case EventType::Done: {
        m_finished = true;
        QByteArray out = roleChunkOnce() + chunk(QJsonObject(), OpenAIChatCodec::finishReason(event.reason));
        if (m_info.includeUsage)
            out += wire::sseFrame(QJsonObject{{L("id"), m_info.responseId},
                                              {L("object"), L("chat.completion.chunk")},
                                              {L("created"), m_info.createdSecs},
                                              {L("model"), m_info.model},
                                              {L("choices"), QJsonArray()},
                                              {L("usage"), OpenAIChatCodec::usageJson(event.usage)}});
        out += "data: [DONE]\n\n";
        return out;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        GatewayError e = GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage);
        return encodeError(e);
    }
    case EventType::TextStart:
    case EventType::TextEnd:
    case EventType::ThinkingStart:
    case EventType::ThinkingEnd:
    case EventType::Image: // chat completions streams carry no images
        return {};
    }
    return {};
}

QByteArray OpenAIChatStreamEncoder::encodeError(const GatewayError &error) {
    m_finished = true;
    return wire::sseFrame(OpenAIChatCodec::errorJson(error));
}

} // namespace sw::formats
