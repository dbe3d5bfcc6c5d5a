#include "core/upstream/openai_completions_stream_decoder.h"

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

void OpenAICompletionsStreamDecoder::readUsage(const QJsonObject &usage) {
    const qint64 prompt = usage.value(L("prompt_tokens")).toInteger();
    const qint64 cached = usage.value(L("prompt_tokens_details")).toObject().value(L("cached_tokens")).toInteger();
    Usage &u = m_out.usage();
    u.input = qMax<qint64>(0, prompt - cached);
    u.cacheRead = cached;
    u.cacheWrite = 0;
    u.output = usage.value(L("completion_tokens")).toInteger();
}

void OpenAICompletionsStreamDecoder::prose(BlockType type, const QString &text) {
    if (text.isEmpty())
        return;
    const ContentBlock *open = m_out.find(kProse);
    if (!open || open->type != type) {
        m_out.close(kProse);
        m_out.open(kProse, type);
    }
    m_out.append(kProse, text);
}

void OpenAICompletionsStreamDecoder::toolDelta(const QJsonObject &call) {
    const QJsonObject fn = call.value(L("function")).toObject();
    const int toolIndex = call.value(L("index")).toInt(0);
    const QString id = call.value(L("id")).toString();
    ContentBlock *open = m_out.find(toolIndex);
    // A server that numbers every call 0 still gives each its own id: a new id is a new call.
    if (open && !id.isEmpty() && !open->toolCallId.isEmpty() && id != open->toolCallId) {
        m_out.close(toolIndex);
        open = nullptr;
    }
    if (!open) {
        m_out.close(kProse); // text or thinking before the calls is finished
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.toolCallId = id;
        b.toolName = fn.value(L("name")).toString();
        m_out.open(toolIndex, b);
    } else {
        if (open->toolName.isEmpty() && fn.contains(L("name")))
            open->toolName = fn.value(L("name")).toString();
        if (open->toolCallId.isEmpty() && !id.isEmpty())
            open->toolCallId = id;
    }
    const QJsonValue args = fn.value(L("arguments"));
    // Some servers send the arguments as an object in one piece.
    m_out.append(toolIndex, args.isObject()
                                ? QString::fromUtf8(QJsonDocument(args.toObject()).toJson(QJsonDocument::Compact))
                                : args.toString());
}

void OpenAICompletionsStreamDecoder::collectNative(const QJsonObject &chunk, const QJsonObject &choice,
                                                   const QJsonObject &delta, qsizetype chunkBytes) {
    if (!m_keepNative)
        return;
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

QJsonObject OpenAICompletionsStreamDecoder::nativeAnswer() const {
    QJsonObject native = m_native;
    if (!m_nativeOverflow) {
        if (m_sawLogprobs)
            native.insert(L("logprobs"),
                          QJsonObject{{L("content"), m_logprobsContent},
                                      {L("refusal"), m_logprobsRefusal.isEmpty() ? QJsonValue(QJsonValue::Null)
                                                                                 : QJsonValue(m_logprobsRefusal)}});
        if (!m_annotations.isEmpty())
            native.insert(L("annotations"), m_annotations);
        if (!m_refusal.isEmpty())
            native.insert(L("refusal"), m_refusal);
    }
    return native;
}

void OpenAICompletionsStreamDecoder::end() {
    StopReason reason = StopReason::Stop;
    if (m_finishReason == L("length"))
        reason = StopReason::Length;
    else if (m_finishReason == L("tool_calls") || m_finishReason == L("function_call"))
        reason = StopReason::ToolUse;
    else if (m_finishReason == L("content_filter") || m_sawRefusal)
        reason = StopReason::Refusal; // the provider's filter or the model declined: not an outage
    m_out.done(reason, nativeAnswer());
}

bool OpenAICompletionsStreamDecoder::isUsageOnlyChunk(const QByteArray &data) {
    if (!data.contains("\"usage\""))
        return false; // most chunks: no parse needed
    const QJsonObject chunk = QJsonDocument::fromJson(data).object();
    return chunk.value(L("usage")).isObject() && chunk.value(L("choices")).toArray().isEmpty();
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::feed(const SseEvent &sse) {
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void OpenAICompletionsStreamDecoder::decode(const SseEvent &sse) {
    const QByteArray data = sse.data.trimmed();
    if (data.isEmpty())
        return;
    if (data == "[DONE]")
        return end();
    const QJsonObject chunk = QJsonDocument::fromJson(data).object();
    const QJsonValue errorValue = chunk.value(L("error"));
    if (!errorValue.isUndefined() && !errorValue.isNull()) {
        const QJsonObject err = errorValue.toObject();
        const QJsonValue code = err.value(L("code"));
        const QString errorType = code.isString() ? code.toString() : err.value(L("type")).toString();
        const QString message = errorValue.isString() ? errorValue.toString() : err.value(L("message")).toString();
        m_out.fail(errorType.isEmpty() ? QStringLiteral("OpenAI stream error: %1").arg(message)
                                       : QStringLiteral("OpenAI stream error (%1): %2").arg(errorType, message),
                   errorType, wire::statusForOpenAIError(err));
        return;
    }
    if (chunk.isEmpty())
        return; // keep-alive or a line we do not understand
    m_out.start(chunk.value(L("id")).toString());
    if (chunk.value(L("usage")).isObject()) {
        readUsage(chunk.value(L("usage")).toObject());
        if (m_keepNative)
            m_native.insert(L("usage"), chunk.value(L("usage"))); // with its *_details as sent
    }

    const QJsonArray choices = chunk.value(L("choices")).toArray();
    if (choices.isEmpty())
        return;
    const QJsonObject choice = choices.first().toObject();
    const QJsonObject delta = choice.value(L("delta")).toObject();
    collectNative(chunk, choice, delta, data.size());

    for (const char *key : {"reasoning_content", "reasoning", "reasoning_text"}) {
        const QString thinking = delta.value(L(key)).toString();
        if (!thinking.isEmpty()) {
            prose(BlockType::Thinking, thinking);
            break; // servers send one of the three names
        }
    }
    // A model refusal (structured outputs) arrives as delta.refusal: its text is the answer.
    const QString refusal = delta.value(L("refusal")).toString();
    m_sawRefusal |= !refusal.isEmpty();
    prose(BlockType::Text, delta.value(L("content")).toString() + refusal);
    for (const QJsonValue &v : delta.value(L("tool_calls")).toArray())
        toolDelta(v.toObject());
    const QJsonValue finish = choice.value(L("finish_reason"));
    if (finish.isString() && !finish.toString().isEmpty()) {
        m_finishReason = finish.toString();
        m_out.closeAll(); // the usage chunk and [DONE] may still follow
    }
}

QList<StreamEvent> OpenAICompletionsStreamDecoder::finish() {
    if (!m_out.finished() && !m_finishReason.isEmpty())
        end(); // finished cleanly, the server just never sent [DONE]
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
