#include "core/upstream/canonical_stream_builder.h"

#include "core/model/event_accumulator.h"

#include <algorithm>

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

StreamEvent event(EventType type, int contentIndex = -1) {
    StreamEvent e;
    e.type = type;
    e.contentIndex = contentIndex;
    return e;
}

} // namespace

void CanonicalStreamBuilder::push(StreamEvent &&event) {
    if (!m_finished)
        m_out << std::move(event);
}

void CanonicalStreamBuilder::failUnechoableNames() {
    fail(QStringLiteral("the upstream named its model or answer with an identifier over 256 bytes or with a control "
                        "character"),
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

CanonicalStreamBuilder::Open *CanonicalStreamBuilder::at(int key) {
    for (Open &o : m_open)
        if (o.key == key)
            return &o;
    return nullptr;
}

ContentBlock &CanonicalStreamBuilder::open(int key, const ContentBlock &block) {
    if (Open *o = at(key))
        return o->block;
    start();
    const int contentIndex = m_nextContentIndex++;
    StreamEvent s = event(startType(block.type), contentIndex);
    s.block = block;
    push(std::move(s));
    auto pos = std::find_if(m_open.begin(), m_open.end(), [key](const Open &o) { return o.key > key; });
    return m_open.insert(pos, Open{key, contentIndex, block})->block;
}

ContentBlock &CanonicalStreamBuilder::open(int key, BlockType type) {
    ContentBlock b;
    b.type = type;
    return open(key, b);
}

ContentBlock *CanonicalStreamBuilder::find(int key) {
    Open *o = at(key);
    return o ? &o->block : nullptr;
}

void CanonicalStreamBuilder::append(int key, const QString &delta) {
    Open *it = at(key);
    if (delta.isEmpty() || !it)
        return;
    (it->block.type == BlockType::ToolCall ? it->block.argumentsJson : it->block.text) += delta;
    StreamEvent d = event(deltaType(it->block.type), it->contentIndex);
    d.delta = delta;
    push(std::move(d));
}

void CanonicalStreamBuilder::close(int key) {
    Open *it = at(key);
    if (!it)
        return;
    StreamEvent e = event(endType(it->block.type), it->contentIndex);
    e.block = std::move(it->block);
    if (e.block.type == BlockType::ToolCall)
        e.block.arguments = model::parseToolArguments(e.block.argumentsJson);
    m_open.erase(it);
    push(std::move(e));
}

void CanonicalStreamBuilder::closeAll() {
    while (!m_open.isEmpty())
        close(m_open.front().key);
}

void CanonicalStreamBuilder::done(StopReason reason, const QJsonObject &native, const QByteArray &nativeUsageJson,
                                  const QString &stopSequence) {
    if (m_finished)
        return;
    closeAll();
    StreamEvent e = event(EventType::Done);
    e.reason = reason;
    e.usage = m_usage;
    e.native = native;
    e.nativeUsageJson = nativeUsageJson;
    e.stopSequence = stopSequence;
    push(std::move(e));
    m_finished = true;
}

void CanonicalStreamBuilder::fail(const QString &message, const QString &errorType, std::optional<int> status,
                                  StopReason reason) {
    StreamEvent e = event(EventType::Error);
    e.reason = reason;
    e.errorMessage = message;
    e.errorType = errorType;
    e.errorStatus = status;
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
    return m_sequenced ? m_sequencer.feed(std::move(out)) : out;
}

} // namespace sw::upstream
