#include "core/model/block_sequencer.h"

namespace sw::model {

namespace {
bool isEnd(EventType t) {
    return t == EventType::TextEnd || t == EventType::ThinkingEnd || t == EventType::ToolCallEnd ||
           t == EventType::Image;
}
} // namespace

QList<StreamEvent> BlockSequencer::feed(const QList<StreamEvent> &events) {
    QList<StreamEvent> out;
    for (const StreamEvent &e : events)
        take(e, out);
    return out;
}

void BlockSequencer::promote(QList<StreamEvent> &out) {
    m_live = -1;
    while (!m_waiting.isEmpty()) {
        const int next = m_waiting.takeFirst();
        out += m_queued.take(next);
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
                out += m_queued.take(k);
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
    if (isEnd(e.type))
        m_ended.insert(e.contentIndex);
}

} // namespace sw::model
