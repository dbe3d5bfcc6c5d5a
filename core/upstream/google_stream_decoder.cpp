#include "core/upstream/google_stream_decoder.h"

#include "core/wire/json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUuid>

namespace sw::upstream {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

} // namespace

void GoogleStreamDecoder::end() {
    if (m_finishReason == L("STOP") || m_finishReason == L("MAX_TOKENS") || m_finishReason.isEmpty() ||
        m_finishReason == L("FINISH_REASON_UNSPECIFIED")) {
        m_out.done(m_finishReason == L("MAX_TOKENS") ? StopReason::Length
                   : m_toolCalls > 0                 ? StopReason::ToolUse
                                                     : StopReason::Stop);
        return;
    }
    // A safety stop (or a blocked prompt, promptFeedback.blockReason) is Google's refusal:
    // a completed answer, never an outage.
    static const QStringList refusals{QStringLiteral("SAFETY"),
                                      QStringLiteral("RECITATION"),
                                      QStringLiteral("BLOCKLIST"),
                                      QStringLiteral("PROHIBITED_CONTENT"),
                                      QStringLiteral("SPII"),
                                      QStringLiteral("IMAGE_SAFETY"),
                                      QStringLiteral("IMAGE_PROHIBITED_CONTENT")};
    if (refusals.contains(m_finishReason))
        return m_out.done(StopReason::Refusal);
    // MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, ...: the model failed to answer.
    m_out.fail(QStringLiteral("Google stopped the answer (finishReason %1)").arg(m_finishReason));
}

void GoogleStreamDecoder::functionCall(const QJsonObject &fc, const QString &signature) {
    m_out.close(kProse);
    ContentBlock b;
    b.type = BlockType::ToolCall;
    b.toolName = fc.value(L("name")).toString();
    // Google gives no call id (or one only on some models): one is made up, unique per call.
    b.toolCallId = fc.value(L("id")).toString();
    if (b.toolCallId.isEmpty())
        b.toolCallId = QStringLiteral("call_") + QUuid::createUuid().toString(QUuid::Id128).left(24);
    b.signature = signature;
    ++m_toolCalls;
    m_out.open(kCall, b); // the arguments follow as the delta
    m_out.append(kCall, QString::fromUtf8(wire::compactJson(fc.value(L("args")).toObject())));
    m_out.close(kCall);
}

QList<StreamEvent> GoogleStreamDecoder::feed(const SseEvent &sse) {
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void GoogleStreamDecoder::decode(const SseEvent &sse) {
    const QByteArray raw = sse.data.trimmed();
    if (raw.isEmpty())
        return;
    const QJsonDocument doc = QJsonDocument::fromJson(raw);
    const QJsonObject chunk = doc.isArray() ? doc.array().at(0).toObject() : doc.object();
    if (chunk.value(L("error")).isObject()) {
        const QJsonObject err = chunk.value(L("error")).toObject();
        const QString status = err.value(L("status")).toString();
        const int code = err.value(L("code")).toInt();
        m_out.fail(QStringLiteral("Google stream error (%1): %2").arg(status, err.value(L("message")).toString()),
                   status, code >= 400 ? std::optional<int>(code) : wire::statusForGoogleStatus(status));
        return;
    }
    if (chunk.isEmpty())
        return;
    m_out.start();
    const QJsonObject usage = chunk.value(L("usageMetadata")).toObject();
    if (!usage.isEmpty()) {
        Usage &u = m_out.usage();
        const qint64 cached = usage.value(L("cachedContentTokenCount")).toInteger();
        u.input = qMax<qint64>(0, usage.value(L("promptTokenCount")).toInteger() - cached);
        u.cacheRead = cached;
        u.output =
            usage.value(L("candidatesTokenCount")).toInteger() + usage.value(L("thoughtsTokenCount")).toInteger();
    }
    const QJsonArray candidates = chunk.value(L("candidates")).toArray();
    if (candidates.isEmpty()) {
        const QString blocked = chunk.value(L("promptFeedback")).toObject().value(L("blockReason")).toString();
        if (!blocked.isEmpty())
            m_finishReason = blocked;
        return;
    }
    const QJsonObject candidate = candidates.first().toObject();
    for (const QJsonValue &pv : candidate.value(L("content")).toObject().value(L("parts")).toArray()) {
        const QJsonObject part = pv.toObject();
        const QString signature = part.value(L("thoughtSignature")).toString();
        if (part.contains(L("functionCall"))) {
            functionCall(part.value(L("functionCall")).toObject(), signature);
            continue;
        }
        if (!part.contains(L("text")))
            continue; // executableCode, inlineData output...: no canonical form in an answer
        const BlockType type = part.value(L("thought")).toBool() ? BlockType::Thinking : BlockType::Text;
        const QString text = part.value(L("text")).toString();
        const ContentBlock *open = m_out.find(kProse);
        if (!open || open->type != type) {
            if (text.isEmpty() && signature.isEmpty())
                continue; // an empty closing part opens nothing
            m_out.close(kProse);
            m_out.open(kProse, type);
        }
        if (!signature.isEmpty())
            m_out.find(kProse)->signature = signature;
        m_out.append(kProse, text);
    }
    const QString finish = candidate.value(L("finishReason")).toString();
    if (!finish.isEmpty())
        m_finishReason = finish;
}

QList<StreamEvent> GoogleStreamDecoder::finish() {
    if (!m_out.finished()) {
        m_out.close(kProse);
        if (!m_finishReason.isEmpty())
            end();
    }
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
