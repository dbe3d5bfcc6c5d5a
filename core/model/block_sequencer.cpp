#include "core/model/block_sequencer.h"

namespace sw::model {

namespace {
bool isEnd(EventType t) {
    return t == EventType::TextEnd || t == EventType::ThinkingEnd || t == EventType::ToolCallEnd ||
           t == EventType::Image;
}

qint64 weight(const StreamEvent &e) {
    return qint64(sizeof(StreamEvent)) +
           2 * (e.delta.size() + e.block.text.size() + e.block.argumentsJson.size() + e.block.signature.size());
}
} // namespace

void BlockSequencer::drop() {
    m_live = -1;
    m_waiting.clear();
    m_queued.clear();
    m_ended.clear();
    m_heldBytes = 0;
}

void BlockSequencer::release(QList<StreamEvent> &out, int block) {
    const QList<StreamEvent> events = m_queued.take(block);
    for (const StreamEvent &e : events)
        m_heldBytes -= weight(e);
    out += events;
}

QList<StreamEvent> BlockSequencer::feed(QList<StreamEvent> &&events) {
    qsizetype straight = 0;
    while (straight < events.size() && passesStraight(events[straight]))
        ++straight;
    if (straight == events.size())
        return std::move(events);
    QList<StreamEvent> out;
    out.reserve(events.size());
    for (qsizetype i = 0; i < straight; ++i)
        out << std::move(events[i]);
    for (qsizetype i = straight; i < events.size(); ++i)
        take(events[i], out);
    return out;
}

// take() for an event that goes out at once with nothing waiting; false, with the state as it
// was, when it would be held back or release held blocks. Nothing waiting means nothing queued
// or ended either (promote and Done empty the three together).
bool BlockSequencer::passesStraight(const StreamEvent &e) {
    if (!m_waiting.isEmpty())
        return false;
    if (e.contentIndex < 0) {
        if (e.type == EventType::Done || e.type == EventType::Error)
            m_live = -1;
        return true;
    }
    if (m_live < 0)
        m_live = e.contentIndex;
    if (e.contentIndex != m_live)
        return false; // a second block while one is live: held back by take()
    if (isEnd(e.type))
        m_live = -1; // promote() with nothing waiting
    return true;
}

void BlockSequencer::promote(QList<StreamEvent> &out) {
    m_live = -1;
    while (!m_waiting.isEmpty()) {
        const int next = m_waiting.takeFirst();
        release(out, next);
        if (!m_ended.remove(next)) {
            m_live = next; // still streaming: its later events go straight out
            return;
        }
    }
}

void BlockSequencer::take(const StreamEvent &e, QList<StreamEvent> &out) {
    if (e.contentIndex < 0) { // Start, Done, Error
        if (e.type == EventType::Done || e.type == EventType::Error) {
            for (int k : std::as_const(m_waiting))
                release(out, k);
            m_waiting.clear();
            m_ended.clear();
            m_live = -1;
        }
        out << e;
        return;
    }
    if (m_live < 0 && !m_queued.contains(e.contentIndex))
        m_live = e.contentIndex;
    if (e.contentIndex == m_live) {
        out << e;
        if (isEnd(e.type))
            promote(out);
        return;
    }
    if (!m_queued.contains(e.contentIndex))
        m_waiting << e.contentIndex;
    m_queued[e.contentIndex] << e;
    m_heldBytes += weight(e);
    if (isEnd(e.type))
        m_ended.insert(e.contentIndex);
}

} // namespace sw::model
