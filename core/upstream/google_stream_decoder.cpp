#include "core/upstream/google_stream_decoder.h"

#include "core/upstream/google_adapter.h"
#include "core/wire/echoed_identifier.h"
#include "core/wire/error_body.h"
#include "core/wire/rapid_json.h"
#include "core/wire/tool_call_id.h"

namespace sw::upstream {

using namespace sw::model;
using wire::rj::member;
using wire::rj::toString;
using wire::rj::Value;
namespace rj = wire::rj;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// A functionCall's name, and the id some models give it (the client gets it tagged,
// GoogleAdapter::toolCallIdFor), may be echoed: every client prints the name, and sends both back.
bool callNamesAreEchoable(const Value *parts) {
    for (const Value &part : parts->GetArray())
        if (!wire::membersAreEchoable(member(&part, "functionCall"), "name", "id"))
            return false;
    return true;
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
    // A blocked prompt (promptFeedback.blockReason, whatever its reason: OTHER is "blocked for
    // reasons not known") or a safety stop is Google's refusal: a completed answer, never an
    // outage (SPEC 3), and never sent on to another provider (probe N1 1).
    static const QStringList refusals{QStringLiteral("SAFETY"),
                                      QStringLiteral("RECITATION"),
                                      QStringLiteral("BLOCKLIST"),
                                      QStringLiteral("PROHIBITED_CONTENT"),
                                      QStringLiteral("SPII"),
                                      QStringLiteral("IMAGE_SAFETY"),
                                      QStringLiteral("IMAGE_PROHIBITED_CONTENT")};
    if (m_promptBlocked)
        return m_out.refuse(QStringLiteral("Google blocked the prompt (blockReason %1)").arg(m_finishReason.left(64)));
    if (refusals.contains(m_finishReason))
        return m_out.refuse(QStringLiteral("Google blocked the answer (finishReason %1)").arg(m_finishReason));
    // MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, LANGUAGE, OTHER, ...: the model did not answer
    // this request, over a connection that worked. The record's row for an error with no status
    // that names no outage: it stops, and the client gets it (502). No mark keeps the model out of
    // the tenant's other requests, and no retry asks again for what it just declined (probe N1 1).
    // Typed, so it does not read as a connection cut early.
    m_out.fail(QStringLiteral("Google ended the answer with finishReason %1: the model did not complete this request")
                   .arg(m_finishReason.left(64)),
               m_finishReason.left(64));
}

void GoogleStreamDecoder::functionCall(const Value *fc, const QString &signature) {
    m_out.close(kProse);
    ContentBlock b;
    b.type = BlockType::ToolCall;
    b.toolName = toString(member(fc, "name"));
    // Google gives a call id only on some models: its own, tagged so that it alone goes back to
    // Gemini (GoogleAdapter::geminiCallId), else one made up, unique per call.
    const QString given = toString(member(fc, "id"));
    b.toolCallId = !given.isEmpty() ? GoogleAdapter::toolCallIdFor(given) : wire::madeUpToolCallId();
    b.signature = signature;
    ++m_toolCalls;
    m_out.open(kCall, b); // the arguments follow as the delta
    const Value *args = rj::asObject(member(fc, "args"));
    m_out.append(kCall, args ? QString::fromUtf8(rj::compact(*args)) : QStringLiteral("{}"));
    m_out.close(kCall);
}

QList<StreamEvent> GoogleStreamDecoder::feed(const SseEvent &sse) {
    m_lastUsageOnly = false;
    if (!m_out.finished())
        decode(sse);
    return m_out.take();
}

void GoogleStreamDecoder::decode(const SseEvent &sse) {
    const QByteArray raw = sse.data.trimmed();
    if (raw.isEmpty())
        return;
    rj::ParsedJson json;
    json.parseUtf8(raw); // an SseReader event: UTF-8
    const Value &root = json.root();
    // A chunk may come wrapped in an array (the whole answer as one JSON array).
    const Value *chunk = rj::asObject(root.IsArray() ? (root.Empty() ? nullptr : &root[0]) : json.object());
    const Value *err = rj::asObject(member(chunk, "error"));
    if (err) {
        const QString status = toString(member(err, "status"));
        const int code = rj::toInt(member(err, "code"));
        // Google's RetryInfo, as the HTTP path reads it: unread, the key was set aside for the hour
        // a quota with no hint gets, where the same body on an HTTP 429 set it aside for its delay
        // (probe N1 3). Beside the text, not in it: the words are classified, and a delay's digits
        // (5000, 42900) would read as a status.
        m_out.fail(
            wire::inBandErrorText(QLatin1String("Google stream error"), status, toString(member(err, "message"))),
            status, code >= 400 ? std::optional<int>(code) : wire::statusForGoogleStatus(status), StopReason::Error,
            wire::googleLimit(err));
        return;
    }
    if (rj::isEmptyObject(chunk))
        return;
    const Value *candidates = rj::asArray(member(chunk, "candidates"));
    const Value *candidate = rj::arraySize(candidates) > 0 ? &(*candidates)[0] : nullptr;
    const Value *parts = rj::asArray(member(member(candidate, "content"), "parts"));
    if (parts && !callNamesAreEchoable(parts)) {
        // Checked before any part is read: none of the chunk's text comes before the error.
        m_out.failUnechoableNames(CanonicalStreamBuilder::Unechoable::ToolCall);
        return;
    }
    // The usage first: Start carries it, so a client told the input at the start (Anthropic's
    // message_start) and the open row of a committed answer get Gemini's counts, not zero.
    const Value *usage = member(chunk, "usageMetadata");
    if (!rj::isEmptyObject(usage)) {
        Usage &u = m_out.usage();
        // A count no upstream could mean (negative, past 2^32) is unknown, never passed on or billed.
        const auto count = [usage](const char *name) { return model::saneTokens(rj::toInteger(member(usage, name))); };
        const qint64 cached = count("cachedContentTokenCount");
        u.input = qMax<qint64>(0, count("promptTokenCount") - cached);
        u.cacheRead = cached;
        u.reasoning = count("thoughtsTokenCount");
        u.output = count("candidatesTokenCount") + u.reasoning;
    }
    m_out.start();
    if (!candidate) {
        const QString blocked = toString(member(member(chunk, "promptFeedback"), "blockReason"));
        if (!blocked.isEmpty()) {
            m_finishReason = blocked;
            m_promptBlocked = true;
        } else {
            m_lastUsageOnly = true; // counts alone move no answer on: not upstream activity (probe IV 1)
        }
        return;
    }
    if (parts) {
        for (const Value &pv : parts->GetArray()) {
            const Value *part = &pv;
            const QString signature = toString(member(part, "thoughtSignature"));
            if (const Value *call = member(part, "functionCall")) {
                functionCall(call, signature);
                continue;
            }
            if (!member(part, "text"))
                continue; // executableCode, inlineData output...: no canonical form in an answer
            const BlockType type = rj::toBool(member(part, "thought")) ? BlockType::Thinking : BlockType::Text;
            const QString text = toString(member(part, "text"));
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
    }
    const QString finish = toString(member(candidate, "finishReason"));
    if (!finish.isEmpty()) {
        m_finishReason = finish;
        m_promptBlocked = false;
    }
}

QList<StreamEvent> GoogleStreamDecoder::finish() {
    // Only a finish reason closes the open text (done() closes every block): a body that ends
    // without one was cut, and its text stays open under the failure, as every other upstream's.
    if (!m_out.finished() && !m_finishReason.isEmpty())
        end();
    m_out.endOfBody();
    return m_out.take();
}

} // namespace sw::upstream
