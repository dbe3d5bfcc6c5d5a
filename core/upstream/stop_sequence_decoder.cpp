#include "core/upstream/stop_sequence_decoder.h"

#include <algorithm>

namespace sw::upstream {

using model::EventType;
using model::StreamEvent;

StopSequenceDecoder::StopSequenceDecoder(std::unique_ptr<StreamDecoder> inner, QStringList stops,
                                         qint64 inputTokensEstimate)
    : WrappingDecoder(std::move(inner)), m_inputEstimate(std::max<qint64>(0, inputTokensEstimate)) {
    for (const QString &s : stops)
        if (!s.isEmpty()) {
            m_stops << s;
            m_holdBack = std::max(m_holdBack, s.size() - 1);
        }
    m_textStart.contentIndex = -1;
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

bool StopSequenceDecoder::release(QList<StreamEvent> &out) {
    // The sequence that completes first, as a model stops: the earliest end; of two ending at one
    // place, the one that starts first. However the upstream split the text, the same one wins.
    qsizetype at = -1;
    qsizetype atEnd = -1;
    const QString *matched = nullptr;
    for (const QString &s : std::as_const(m_stops)) {
        const qsizetype i = m_pending.indexOf(s);
        if (i < 0)
            continue;
        const qsizetype end = i + s.size();
        if (at < 0 || end < atEnd || (end == atEnd && i < at)) {
            at = i;
            atEnd = end;
            matched = &s;
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
            if (!release(out))
                return out;
            continue;
        }
        // Whatever comes next (the block's end, another block, the answer's end or an error), what
        // is held back holds no stop sequence (each delta was searched): it is the block's text.
        passOnPending(out, m_pending.size());
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
