#include "core/formats/openai_chat_stream_encoder.h"
#include "core/wire/tool_call_id.h"

#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_codec.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"

namespace sw::formats {

using namespace sw::model;

void OpenAIChatStreamEncoder::beginEnvelope(wire::JsonWriter &w) const {
    w.beginSseEvent()
        .beginObject()
        .field("id", m_info.responseId)
        .field("object", "chat.completion.chunk")
        .field("created", m_info.createdSecs)
        .field("model", m_info.model)
        .key("choices")
        .beginArray();
}

void OpenAIChatStreamEncoder::beginChunk(wire::JsonWriter &w) const {
    beginEnvelope(w);
    w.beginObject().field("index", 0).key("delta").beginObject();
}

void OpenAIChatStreamEncoder::endChunk(wire::JsonWriter &w, QLatin1String finishReason) {
    w.endObject(); // delta
    if (finishReason.isEmpty())
        w.key("finish_reason").null();
    else
        w.field("finish_reason", finishReason);
    w.endObject().endArray().endObject().endSseEvent();
}

void OpenAIChatStreamEncoder::argumentsChunk(wire::JsonWriter &w, int toolIndex, const QString &arguments) const {
    beginChunk(w);
    w.key("tool_calls")
        .beginArray()
        .beginObject()
        .field("index", toolIndex)
        .key("function")
        .beginObject()
        .field("arguments", arguments)
        .endObject()
        .endObject()
        .endArray();
    endChunk(w);
}

void OpenAIChatStreamEncoder::roleChunkOnce(wire::JsonWriter &w) {
    if (m_sentRole)
        return;
    m_sentRole = true;
    beginChunk(w);
    w.field("role", "assistant").field("content", QString());
    endChunk(w);
}

QByteArray OpenAIChatStreamEncoder::encode(const StreamEvent &event) {
    if (m_finished)
        return {};
    wire::JsonWriter w(event.delta.size() + 512);
    switch (event.type) {
    case EventType::Start:
        roleChunkOnce(w);
        break;
    case EventType::TextDelta:
        if (event.delta.isEmpty())
            return {};
        roleChunkOnce(w);
        beginChunk(w);
        w.field(m_refusalBlocks.contains(event.contentIndex) ? "refusal" : "content", event.delta);
        endChunk(w);
        break;
    case EventType::ThinkingDelta:
        // reasoning_content is what DeepSeek, vLLM and most OpenAI-compatible clients read.
        if (event.delta.isEmpty() || m_info.hideReasoning)
            return {};
        roleChunkOnce(w);
        beginChunk(w);
        w.field("reasoning_content", event.delta);
        endChunk(w);
        break;
    case EventType::ToolCallStart: {
        const int index = int(m_toolIndexByContentIndex.size());
        m_toolIndexByContentIndex.insert(event.contentIndex, index);
        roleChunkOnce(w);
        if (m_info.customTools.contains(event.block.toolName)) {
            // A custom tool's call: its input is text, sent whole when the call ends.
            m_customCalls.insert(event.contentIndex, event.block);
            break;
        }
        beginChunk(w);
        w.key("tool_calls")
            .beginArray()
            .beginObject()
            .field("index", index)
            .field("id", wire::clientToolCallId(event.block.toolCallId, wire::kChatMaxToolIdLength))
            .field("type", "function")
            .key("function")
            .beginObject()
            .field("name", event.block.toolName)
            .field("arguments", QString())
            .endObject();
        OpenAIChatCodec::writeCallSignature(w, event.block, m_info.upstreamApi);
        w.endObject().endArray();
        endChunk(w);
        break;
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
        argumentsChunk(w, *it, event.delta);
        break;
    }
    case EventType::ToolCallEnd: {
        // A call with no streamed arguments (a tool without parameters) still gets "{}",
        // as OpenAI sends it: clients JSON.parse the arguments string.
        const auto it = m_toolIndexByContentIndex.constFind(event.contentIndex);
        if (it != m_toolIndexByContentIndex.constEnd() && m_customCalls.contains(event.contentIndex)) {
            ContentBlock call = m_customCalls.take(event.contentIndex);
            if (!event.block.arguments.isEmpty())
                call.arguments = event.block.arguments;
            beginChunk(w);
            w.key("tool_calls")
                .beginArray()
                .beginObject()
                .field("index", *it)
                .field("id", wire::clientToolCallId(call.toolCallId, wire::kChatMaxToolIdLength))
                .field("type", "custom")
                .key("custom")
                .beginObject()
                .field("name", call.toolName)
                .field("input", OpenAIResponsesCodec::customInput(call))
                .endObject();
            OpenAIChatCodec::writeCallSignature(w, call, m_info.upstreamApi);
            w.endObject().endArray();
            endChunk(w);
            break;
        }
        if (it == m_toolIndexByContentIndex.constEnd() || m_toolsWithArguments.contains(event.contentIndex))
            return {};
        m_toolsWithArguments.insert(event.contentIndex);
        argumentsChunk(w, *it, QString::fromUtf8(wire::compactJson(event.block.arguments)));
        break;
    }
    case EventType::Done: {
        m_finished = true;
        roleChunkOnce(w);
        beginChunk(w);
        // A refusal in its own field is a finished answer, as OpenAI ends it (encodeResponse).
        endChunk(w, OpenAIChatCodec::finishReason(m_refusalBlocks.isEmpty() ? event.reason : StopReason::Stop));
        if (m_info.includeUsage) {
            beginEnvelope(w);
            w.endArray().key("usage");
            OpenAIChatCodec::writeUsage(w, event.usage);
            w.endObject().endSseEvent();
        }
        w.appendRaw("data: [DONE]\n\n");
        break;
    }
    case EventType::Error: {
        const int status = event.errorStatus.value_or(500);
        GatewayError e = GatewayError::make(status, GatewayError::categoryForStatus(status), event.errorMessage);
        return encodeError(e);
    }
    case EventType::TextStart:
        if (event.block.refusal)
            m_refusalBlocks.insert(event.contentIndex);
        return {};
    case EventType::TextEnd:
    case EventType::ThinkingStart:
    case EventType::ThinkingEnd:
    case EventType::Image: // chat completions streams carry no images
        return {};
    }
    return w.take();
}

QByteArray OpenAIChatStreamEncoder::encodeError(const GatewayError &error) {
    m_finished = true;
    wire::JsonWriter w(160 + error.message.size());
    w.beginSseEvent();
    OpenAIChatCodec::writeError(w, error, true);
    w.endSseEvent();
    return w.take();
}

} // namespace sw::formats
