#pragma once
// Puts a canonical event stream into block order. Some upstreams interleave the
// deltas of parallel tool calls (Chat Completions servers such as vLLM send
// index 0, 1, 0, 1 …; Responses may interleave by output_index), but every
// client format streams one block at a time (Anthropic content blocks never
// interleave; pi indexes a growing content array). The first block started is
// streamed live; events of blocks started after it wait, and are released in
// start order when the live block ends. Done and Error release everything.

#include "core/model/chat.h"

#include <QHash>
#include <QList>
#include <QSet>

namespace sw::model {

class BlockSequencer final {
public:
    // The events in block order. The usual case, nothing held back and every event in the
    // live block's order, hands the list back as it came (no copy: a long answer is hundreds
    // of one-event lists).
    QList<StreamEvent> feed(QList<StreamEvent> &&events);
    // What the held-back events weigh (their text, about two bytes a character, and the events).
    qint64 heldBytes() const { return m_heldBytes; }
    // Forgets everything held back (the stream failed): nothing of it is released.
    void drop();

private:
    bool passesStraight(const StreamEvent &e);
    void take(const StreamEvent &e, QList<StreamEvent> &out);
    void promote(QList<StreamEvent> &out);
    void release(QList<StreamEvent> &out, int block);

    int m_live = -1;                         // contentIndex streamed now, -1 none
    QList<int> m_waiting;                    // blocks held back, in start order
    QHash<int, QList<StreamEvent>> m_queued; // their events so far
    QSet<int> m_ended;                       // waiting blocks whose end event is queued
    qint64 m_heldBytes = 0;                  // what m_queued weighs
};

} // namespace sw::model
