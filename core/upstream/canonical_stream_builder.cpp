#include "core/upstream/canonical_stream_builder.h"

#include "core/model/event_accumulator.h"
#include "core/wire/rapid_json.h"

#include <utility>

namespace sw::upstream {

using model::EventType;

namespace {

EventType startType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingStart
           : t == BlockType::ToolCall ? EventType::ToolCallStart
                                      : EventType::TextStart;
}

EventType deltaType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingDelta
           : t == BlockType::ToolCall ? EventType::ToolCallDelta
                                      : EventType::TextDelta;
}

EventType endType(BlockType t) {
    return t == BlockType::Thinking   ? EventType::ThinkingEnd
           : t == BlockType::ToolCall ? EventType::ToolCallEnd
                                      : EventType::TextEnd;
}

// A tool call's End carries its arguments parsed, up to kMaxParsedArgumentsChars of text; a longer
// one carries the text alone, for an encoder that needs the object to parse.
QJsonObject parsedArguments(const QString &json) {
    if (json.size() > CanonicalStreamBuilder::kMaxParsedArgumentsChars)
        return {};
    return wire::rj::parseToolArguments(json);
}

StreamEvent event(EventType type, int contentIndex = -1) {
    StreamEvent e;
    e.type = type;
    e.contentIndex = contentIndex;
    return e;
}

} // namespace

void CanonicalStreamBuilder::push(StreamEvent &&event) {
    if (m_finished)
        return;
    // take() hands the list out whole, so each upstream event starts a new one: room for the few
    // events one upstream event makes, instead of growing (and moving every event) at each push.
    if (m_out.capacity() == 0)
        m_out.reserve(4);
    m_out << std::move(event);
}

void CanonicalStreamBuilder::failUnechoableNames(Unechoable what) {
    fail(what == Unechoable::ToolCall
             ? QStringLiteral("the upstream gave a tool call a name or id over 256 bytes or with a control character")
             : QStringLiteral("the upstream named its model or answer with an identifier over 256 bytes or with a "
                              "control character"),
         QStringLiteral("invalid_response"), 502);
}

void CanonicalStreamBuilder::start(const QString &responseId) {
    if (m_started || m_finished)
        return;
    m_started = true;
    StreamEvent e = event(EventType::Start);
    e.usage = m_usage;
    e.responseId = responseId;
    push(std::move(e));
}

ContentBlock &CanonicalStreamBuilder::open(int key, const ContentBlock &block) {
    if (const auto it = m_open.find(key); it != m_open.end())
        return it->second.block;
    if (m_finished)
        return m_refused = block;
    if (m_nextContentIndex >= kMaxContentBlocks) {
        failOverBound(QStringLiteral("the upstream's answer has more than %1 content blocks").arg(kMaxContentBlocks));
        return m_refused = block;
    }
    start();
    const int contentIndex = m_nextContentIndex++;
    StreamEvent s = event(startType(block.type), contentIndex);
    s.block = block;
    push(std::move(s));
    return m_open.emplace(key, Open{contentIndex, block}).first->second.block;
}

ContentBlock &CanonicalStreamBuilder::open(int key, BlockType type) {
    ContentBlock b;
    b.type = type;
    return open(key, b);
}

ContentBlock *CanonicalStreamBuilder::find(int key) {
    const auto it = m_open.find(key);
    return it == m_open.end() ? nullptr : &it->second.block;
}

void CanonicalStreamBuilder::append(int key, const QString &delta) {
    const auto it = m_open.find(key);
    if (delta.isEmpty() || it == m_open.end())
        return;
    Open &o = it->second;
    o.said = true;
    // A streaming Anthropic or Chat client is sent each delta and never a block whole: its answer
    // keeps neither text nor a tool call's arguments here. One 60 MB tool call held 120 MB (UTF-16)
    // a stream, outside the budget all requests share (probe A3 2).
    if (m_keepsText)
        (o.block.type == BlockType::ToolCall ? o.block.argumentsJson : o.block.text) += delta;
    StreamEvent d = event(deltaType(o.block.type), o.contentIndex);
    d.delta = delta;
    push(std::move(d));
}

bool CanonicalStreamBuilder::hasText(int key) const {
    const auto it = m_open.find(key);
    return it != m_open.end() &&
           (it->second.said || !it->second.block.text.isEmpty() || !it->second.block.argumentsJson.isEmpty());
}

StreamEvent CanonicalStreamBuilder::endEvent(Open &&o) {
    StreamEvent e = event(endType(o.block.type), o.contentIndex);
    e.block = std::move(o.block);
    if (e.block.type == BlockType::ToolCall)
        e.block.arguments = parsedArguments(e.block.argumentsJson);
    return e;
}

void CanonicalStreamBuilder::close(int key) {
    const auto it = m_open.find(key);
    if (it == m_open.end())
        return;
    StreamEvent e = endEvent(std::move(it->second));
    m_open.erase(it);
    push(std::move(e));
}

void CanonicalStreamBuilder::closeAll() {
    for (auto &[key, o] : m_open)
        push(endEvent(std::move(o)));
    m_open.clear();
}

void CanonicalStreamBuilder::failOverBound(const QString &message) {
    // Nothing held back reaches the client: the answer is broken, and what the sequencer held is
    // what the bound is about. What it would release now still goes (the live block's events).
    if (m_sequenced) {
        m_released += m_sequencer.feed(std::exchange(m_out, {}));
        m_sequencer.drop();
    }
    fail(message, QStringLiteral("invalid_response"), 502);
    m_open.clear();
    m_failedOverBound = true;
}

void CanonicalStreamBuilder::refuse(const QString &why, const QJsonObject &native, const QByteArray &nativeUsageJson) {
    m_refusal = why;
    done(StopReason::Refusal, native, nativeUsageJson);
}

void CanonicalStreamBuilder::done(StopReason reason, const QJsonObject &native, const QByteArray &nativeUsageJson,
                                  const QString &stopSequence) {
    if (m_finished)
        return;
    closeAll();
    StreamEvent e = event(EventType::Done);
    e.reason = reason;
    if (reason == StopReason::Refusal)
        e.errorMessage = m_refusal;
    e.usage = m_usage;
    e.native = native;
    e.nativeUsageJson = nativeUsageJson;
    e.stopSequence = stopSequence;
    push(std::move(e));
    m_finished = true;
}

void CanonicalStreamBuilder::fail(const QString &message, const QString &errorType, std::optional<int> status,
                                  StopReason reason, const wire::GoogleLimit &limit, bool saidFinal) {
    StreamEvent e = event(EventType::Error);
    e.reason = reason;
    e.errorMessage = message;
    e.errorType = errorType;
    e.errorStatus = status;
    e.errorRetryAfterMs = limit.retryAfterMs;
    e.errorQuotaOfOneModel = limit.oneModel;
    e.errorFinal = saidFinal;
    e.usage = m_usage;
    push(std::move(e));
    m_finished = true;
}

void CanonicalStreamBuilder::endOfBody() {
    if (!m_finished)
        fail(QStringLiteral("stream ended before completion"));
}

QList<StreamEvent> CanonicalStreamBuilder::take() {
    QList<StreamEvent> out;
    out.swap(m_out);
    if (!m_sequenced)
        return out;
    out = m_sequencer.feed(std::move(out));
    if (m_sequencer.heldBytes() > kMaxSequencedHoldBytes && !m_finished) {
        // The live block stays open while later ones stream: what they say waits here, out of the
        // client's queue and so out of backpressure's sight. Past the bound the stream fails.
        failOverBound(QStringLiteral("the upstream interleaved over %1 bytes of later blocks behind a block it "
                                     "kept open")
                          .arg(kMaxSequencedHoldBytes));
        out += std::exchange(m_released, {});
        out += m_sequencer.feed(std::exchange(m_out, {}));
    }
    if (!m_released.isEmpty())
        out = std::exchange(m_released, {}) + out;
    return out;
}

} // namespace sw::upstream
