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
    QList<StreamEvent> feed(const QList<StreamEvent> &events);

private:
    void take(const StreamEvent &e, QList<StreamEvent> &out);
    void promote(QList<StreamEvent> &out);

    int m_live = -1;                         // contentIndex streamed now, -1 none
    QList<int> m_waiting;                    // blocks held back, in start order
    QHash<int, QList<StreamEvent>> m_queued; // their events so far
    QSet<int> m_ended;                       // waiting blocks whose end event is queued
};

} // namespace sw::model
