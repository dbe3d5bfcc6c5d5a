#include "upstream/openai_completions_stream_decoder.h"

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

void OpenAICompletionsStreamDecoder::readUsage(const QJsonObject &usage) {
    const qint64 prompt = usage.value(L("prompt_tokens")).toInteger();
    const qint64 cached = usage.value(L("prompt_tokens_details")).toObject().value(L("cached_tokens")).toInteger();
    m_usage.input = qMax<qint64>(0, prompt - cached);
    m_usage.cacheRead = cached;
    m_usage.cacheWrite = 0;
    m_usage.output = usage.value(L("completion_tokens")).toInteger();
}

void OpenAICompletionsStreamDecoder::startBlock(BlockType type, QList<StreamEvent> &out) {
    closeBlock(out);
    OpenBlock open;
    open.contentIndex = m_nextContentIndex++;
    open.block.type = type;
    m_open = open;
}

namespace {
StreamEvent endEvent(const ContentBlock &block, int contentIndex) {
    EventType type = EventType::TextEnd;
    if (block.type == BlockType::Thinking)
        type = EventType::ThinkingEnd;
    else if (block.type == BlockType::ToolCall)
        type = EventType::ToolCallEnd;
    StreamEvent e = event(type, contentIndex);
    e.block = block;
    if (type == EventType::ToolCallEnd)
        e.block.arguments = parseToolArguments(e.block.argumentsJson);
    return e;
}
} // namespace

void OpenAICompletionsStreamDecoder::closeBlock(QList<StreamEvent> &out) {
    if (!m_open)
        return;
    out << endEvent(m_open->block, m_open->contentIndex);
    m_open.reset();
}

void OpenAICompletionsStreamDecoder::closeTool(int toolIndex, QList<StreamEvent> &out) {
    const auto it = m_tools.constFind(toolIndex);
    if (it == m_tools.constEnd())
        return;
    out << endEvent(it->block, it->contentIndex);
    m_tools.erase(it);
}

void OpenAICompletionsStreamDecoder::closeAll(QList<StreamEvent> &out) {
    closeBlock(out);
    while (!m_tools.isEmpty())
        closeTool(m_tools.firstKey(), out);
}

void OpenAICompletionsStreamDecoder::toolDelta(const QJsonObject &call, QList<StreamEvent> &out) {
    const QJsonObject fn = call.value(L("function")).toObject();
    const int toolIndex = call.value(L("index")).toInt(0);
    const QString id = call.value(L("id")).toString();
    auto it = m_tools.find(toolIndex);
    // A server that numbers every call 0 still gives each its own id: a new id is a new call.
    if (it != m_tools.end() && !id.isEmpty() && !it->block.toolCallId.isEmpty() && id != it->block.toolCallId) {
        closeTool(toolIndex, out);
        it = m_tools.end();
    }
    if (it == m_tools.end()) {
        closeBlock(out); // text or thinking before the calls is finished
        OpenBlock open;
        open.contentIndex = m_nextContentIndex++;
        open.toolIndex = toolIndex;
        open.block.type = BlockType::ToolCall;
        open.block.toolCallId = id;
        open.block.toolName = fn.value(L("name")).toString();
        StreamEvent s = event(EventType::ToolCallStart, open.contentIndex);
        s.block = open.block;
        out << s;
        it = m_tools.insert(toolIndex, open);
    } else {
        if (it->block.toolName.isEmpty() && fn.contains(L("name")))
            it->block.toolName = fn.value(L("name")).toString();
        if (it->block.toolCallId.isEmpty() && !id.isEmpty())
            it->block.toolCallId = id;
    }
    const QJsonValue args = fn.value(L("arguments"));
    // Some servers send the arguments as an object in one piece.
    const QString fragment = args.isObject()
                                 ? QString::fromUtf8(QJsonDocument(args.toObject()).toJson(QJsonDocument::Compact))
                                 : args.toString();
    if (!fragment.isEmpty()) {
        it->block.argumentsJson += fragment;
        StreamEvent d = event(EventType::ToolCallDelta, it->contentIndex);
        d.delta = fragment;
        out << d;
    }
}

void OpenAICompletionsStreamDecoder::collectNative(const QJsonObject &chunk, const QJsonObject &choice,
                                                   const QJsonObject &delta, qsizetype chunkBytes) {
    for (const char *key : {"system_fingerprint", "service_tier"})
        if (chunk.value(L(key)).isString())
            m_native.insert(L(key), chunk.value(L(key)));
    if (m_nativeOverflow)
        return;
    const QJsonObject logprobs = choice.value(L("logprobs")).toObject();
    const QJsonArray annotations = delta.value(L("annotations")).toArray();
    if (!logprobs.isEmpty() || !annotations.isEmpty()) {
        // Logprobs grow with every token; past the bound the answer goes without them rather
        // than hold an unbounded copy (the client can stream to get them all).
        m_nativeBytes += chunkBytes;
        if (m_nativeBytes > kMaxNativeChars) {
            m_nativeOverflow = true;
            m_logprobsContent = {};
            m_logprobsRefusal = {};
            m_annotations = {};
            return;
        }
    }
    if (!logprobs.isEmpty()) {
        m_sawLogprobs = true;
        for (const QJsonValue &v : logprobs.value(L("content")).toArray())
            m_logprobsContent.append(v);
        for (const QJsonValue &v : logprobs.value(L("refusal")).toArray())
            m_logprobsRefusal.append(v);
    }
    for (const QJsonValue &v : annotations)
        m_annotations.append(v);
    m_refusal += delta.value(L("refusal")).toString();
}

StreamEvent OpenAICompletionsStreamDecoder::terminalEvent() {
    m_terminal = true;
    StreamEvent e = event(EventType::Done);
    e.usage = m_usage;
    e.native = m_native;
    if (!m_nativeOverflow) {
        if (m_sawLogprobs)
            e.native.insert(L("logprobs"),
                            QJsonObject{{L("content"), m_logprobsContent},
                                        {L("refusal"), m_logprobsRefusal.isEmpty() ? QJsonValue(QJsonValue::Null)
                                                                                   : QJsonValue(m_logprobsRefusal)}});
        if (!m_annotations.isEmpty())
            e.native.insert(L("annotations"), m_annotations);
        if (!m_refusal.isEmpty())
            e.native.insert(L("refusal"), m_refusal);
    }
    if (m_finishReason == L("length"))
        e.reason = StopReason::Length;
    else if (m_finishReason == L("tool_calls") || m_finishReason == L("function_call"))
        e.reason = StopReason::ToolUse;
    else if (m_finishReason == L("content_filter") || m_sawRefusal)
        e.reason = StopReason::Refusal; // the provider's filter or the model declined: not an outage
    else
        e.reason = StopReason::Stop;
    return e;
}

bool OpenAICompletionsStreamDecoder::isUsageOnlyChunk(const QByteArray &data) {
    if (!data.contains("\"usage\""))
        return false; // most chunks: no parse needed
    const QJsonObject chunk = QJsonDocument::fromJson(data).object();
    return chunk.value(L("usage")).isObject() && chunk.value(L("choices")).toArray().isEmpty();
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::feed(const SseEvent &sse) {
    return m_sequencer.feed(decode(sse));
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::decode(const SseEvent &sse) {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    const QByteArray data = sse.data.trimmed();
    if (data.isEmpty())
        return out;
    if (data == "[DONE]") {
        closeAll(out);
        out << terminalEvent();
        return out;
    }
    const QJsonObject chunk = QJsonDocument::fromJson(data).object();
    const QJsonValue errorValue = chunk.value(L("error"));
    if (!errorValue.isUndefined() && !errorValue.isNull()) {
        const QJsonObject err = errorValue.toObject();
        StreamEvent e = event(EventType::Error);
        e.reason = StopReason::Error;
        const QJsonValue code = err.value(L("code"));
        e.errorType = code.isString() ? code.toString() : err.value(L("type")).toString();
        const QString message = errorValue.isString() ? errorValue.toString() : err.value(L("message")).toString();
        e.errorMessage = e.errorType.isEmpty()
                             ? QStringLiteral("OpenAI stream error: %1").arg(message)
                             : QStringLiteral("OpenAI stream error (%1): %2").arg(e.errorType, message);
        e.errorStatus = wire::statusForOpenAIError(err);
        e.usage = m_usage;
        m_terminal = true;
        out << e;
        return out;
    }
    if (chunk.isEmpty())
        return out; // keep-alive or a line we do not understand
    if (!m_started) {
        m_started = true;
        StreamEvent e = event(EventType::Start);
        e.responseId = chunk.value(L("id")).toString();
        out << e;
    }
    if (chunk.value(L("usage")).isObject()) {
        readUsage(chunk.value(L("usage")).toObject());
        m_native.insert(L("usage"), chunk.value(L("usage"))); // with its *_details as sent
    }

    const QJsonArray choices = chunk.value(L("choices")).toArray();
    if (choices.isEmpty())
        return out;
    const QJsonObject choice = choices.first().toObject();
    const QJsonObject delta = choice.value(L("delta")).toObject();
    collectNative(chunk, choice, delta, data.size());

    for (const char *key : {"reasoning_content", "reasoning", "reasoning_text"}) {
        const QString thinking = delta.value(L(key)).toString();
        if (thinking.isEmpty())
            continue;
        if (!m_open || m_open->block.type != BlockType::Thinking) {
            startBlock(BlockType::Thinking, out);
            out << event(EventType::ThinkingStart, m_open->contentIndex);
            out.last().block.type = BlockType::Thinking;
        }
        m_open->block.text += thinking;
        StreamEvent e = event(EventType::ThinkingDelta, m_open->contentIndex);
        e.delta = thinking;
        out << e;
        break; // servers send one of the three names
    }
    // A model refusal (structured outputs) arrives as delta.refusal: its text is the answer.
    const QString refusal = delta.value(L("refusal")).toString();
    m_sawRefusal |= !refusal.isEmpty();
    const QString text = delta.value(L("content")).toString() + refusal;
    if (!text.isEmpty()) {
        if (!m_open || m_open->block.type != BlockType::Text) {
            startBlock(BlockType::Text, out);
            out << event(EventType::TextStart, m_open->contentIndex);
        }
        m_open->block.text += text;
        StreamEvent e = event(EventType::TextDelta, m_open->contentIndex);
        e.delta = text;
        out << e;
    }
    for (const QJsonValue &v : delta.value(L("tool_calls")).toArray())
        toolDelta(v.toObject(), out);
    const QJsonValue finish = choice.value(L("finish_reason"));
    if (finish.isString() && !finish.toString().isEmpty()) {
        m_finishReason = finish.toString();
        closeAll(out); // the usage chunk and [DONE] may still follow
    }
    return out;
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::finish() {
    QList<StreamEvent> out;
    if (m_terminal)
        return out;
    if (!m_finishReason.isEmpty()) { // finished cleanly, the server just never sent [DONE]
        out << terminalEvent();
        return m_sequencer.feed(out);
    }
    m_terminal = true;
    StreamEvent e = event(EventType::Error);
    e.reason = StopReason::Error;
    e.errorMessage = QStringLiteral("stream ended before completion");
    e.usage = m_usage;
    out << e;
    return m_sequencer.feed(out);
}

} // namespace sw::upstream
