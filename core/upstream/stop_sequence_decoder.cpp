#include "core/upstream/stop_sequence_decoder.h"

#include <algorithm>
#include <numeric>

namespace sw::upstream {

using model::EventType;
using model::StreamEvent;

namespace {
quint64 edge(int node, char16_t unit) {
    return (quint64(node) << 16) | unit;
}
} // namespace

StopSequenceDecoder::StopSequenceDecoder(std::unique_ptr<StreamDecoder> inner, QStringList stops,
                                         qint64 inputTokensEstimate)
    : WrappingDecoder(std::move(inner)), m_inputEstimate(std::max<qint64>(0, inputTokensEstimate)) {
    m_nodes.append(Node{});
    QList<int> depth{0};
    for (const QString &s : stops) {
        if (s.isEmpty())
            continue;
        m_stops << s;
        m_holdBack = std::max(m_holdBack, s.size() - 1);
        int node = 0;
        for (const QChar c : s) {
            auto child = m_children.constFind(edge(node, c.unicode()));
            if (child == m_children.cend()) {
                m_nodes.append(Node{node, c.unicode()});
                depth.append(depth.at(node) + 1);
                child = m_children.insert(edge(node, c.unicode()), int(m_nodes.size() - 1));
            }
            node = *child;
        }
        if (m_nodes[node].stop < 0) // of two equal sequences, the first
            m_nodes[node].stop = int(m_stops.size() - 1);
    }
    // Nearest the root first: a node's fallback is found from its parent's, which is nearer.
    QList<int> order(m_nodes.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&depth](int a, int b) { return depth.at(a) < depth.at(b); });
    for (const int n : std::as_const(order)) {
        if (n == 0)
            continue;
        Node &node = m_nodes[n];
        node.fallback = node.parent == 0 ? 0 : step(m_nodes.at(node.parent).fallback, node.unit);
        if (node.stop < 0) // its own sequence is the longest it ends with; else its fallback's
            node.stop = m_nodes.at(node.fallback).stop;
    }
    m_textStart.contentIndex = -1;
}

int StopSequenceDecoder::step(int state, char16_t c) const {
    // Each fallback is nearer the root: the steps back are paid for by the steps forward.
    for (;;) {
        if (const auto child = m_children.constFind(edge(state, c)); child != m_children.cend())
            return *child;
        if (state == 0)
            return 0;
        state = m_nodes.at(state).fallback;
    }
}

QList<StreamEvent> StopSequenceDecoder::feed(const SseEvent &event) {
    QList<StreamEvent> events = m_inner->feed(event);
    return m_stopped ? QList<StreamEvent>() : filter(std::move(events));
}

QList<StreamEvent> StopSequenceDecoder::finish() {
    QList<StreamEvent> events = m_inner->finish();
    return m_stopped ? QList<StreamEvent>() : filter(std::move(events));
}

void StopSequenceDecoder::passOnPending(QList<StreamEvent> &out, qsizetype chars) {
    if (chars <= 0)
        return;
    StreamEvent delta;
    delta.type = EventType::TextDelta;
    delta.contentIndex = m_textStart.contentIndex;
    delta.delta = m_pending.left(chars);
    m_sent += delta.delta;
    m_pending.remove(0, chars);
    out << delta;
}

bool StopSequenceDecoder::release(QList<StreamEvent> &out, qsizetype fresh) {
    // The sequence that completes first, as a model stops: the earliest end; of two ending at one
    // place, the one that starts first (the longer). However the upstream split the text, the same
    // one wins. Only the new characters are read: what is held back before them is as long as any
    // sequence less one, so one that ends among them starts in the pending text.
    qsizetype at = -1;
    const QString *matched = nullptr;
    for (qsizetype i = m_pending.size() - fresh; i < m_pending.size(); ++i) {
        m_state = step(m_state, m_pending.at(i).unicode());
        if (const int stop = m_nodes.at(m_state).stop; stop >= 0) {
            matched = &m_stops.at(stop);
            at = i + 1 - matched->size();
            break;
        }
    }
    qsizetype passOn = at >= 0 ? at : std::max<qsizetype>(0, m_pending.size() - m_holdBack);
    // Never half a character: a pair of UTF-16 surrogates (an emoji) goes out whole, or a client
    // gets two lone halves it cannot join (Python's str refuses to encode them).
    if (passOn > 0 && m_pending.at(passOn - 1).isHighSurrogate())
        --passOn;
    passOnPending(out, passOn);
    if (at < 0)
        return true;
    StreamEvent end;
    end.type = EventType::TextEnd;
    end.contentIndex = m_textStart.contentIndex;
    end.block = m_textStart.block;
    end.block.text = m_sent;
    StreamEvent done;
    done.type = EventType::Done;
    done.reason = model::StopReason::Stop;
    done.stopSequence = *matched;
    done.usage = m_usage;
    // What the upstream did not report yet is estimated (see the header).
    if (done.usage.input == 0 && done.usage.cacheRead == 0 && done.usage.cacheWrite == 0)
        done.usage.input = m_inputEstimate;
    if (done.usage.output == 0)
        done.usage.output = std::max<qint64>(1, (m_producedChars + 3) / 4);
    out << end << done;
    m_stopped = true;
    return false;
}

QList<StreamEvent> StopSequenceDecoder::filter(QList<StreamEvent> events) {
    QList<StreamEvent> out;
    out.reserve(events.size());
    for (StreamEvent &e : events) {
        if (!e.usage.isZero())
            m_usage = e.usage;
        if (e.type == EventType::TextDelta || e.type == EventType::ThinkingDelta || e.type == EventType::ToolCallDelta)
            m_producedChars += e.delta.size();
        const bool inOpenText = m_textStart.contentIndex >= 0 && e.contentIndex == m_textStart.contentIndex;
        if (e.type == EventType::TextDelta && inOpenText) {
            m_pending += e.delta;
            if (!release(out, e.delta.size()))
                return out;
            continue;
        }
        // Whatever comes next (the block's end, another block, the answer's end or an error), what
        // is held back holds no stop sequence (each delta was searched): it is the block's text.
        // The text after it is searched afresh.
        passOnPending(out, m_pending.size());
        m_state = 0;
        if (e.type == EventType::TextStart) {
            m_textStart = e;
            m_sent.clear();
        } else if (e.type == EventType::TextEnd && inOpenText) {
            m_textStart.contentIndex = -1;
        }
        out << std::move(e);
    }
    return out;
}

} // namespace sw::upstream
