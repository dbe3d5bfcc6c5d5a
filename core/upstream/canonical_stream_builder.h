#pragma once
// What every upstream stream decoder does once it has read a frame: keep the blocks it
// has open, number them, and write the canonical events in a valid order. Start comes
// once, before anything else; each block's End carries the whole block (a tool call's
// arguments parsed); one terminal event (Done or Error) ends the stream and anything
// after it is dropped. A decoder only says what the upstream meant.

#include "core/model/block_sequencer.h"
#include "core/model/chat.h"

#include <QList>
#include <QString>
#include <QVarLengthArray>

namespace sw::upstream {

using model::BlockType;
using model::ContentBlock;
using model::StopReason;
using model::StreamEvent;
using model::Usage;

class CanonicalStreamBuilder final {
public:
    // `sequenced`: the upstream may interleave blocks (parallel tool calls); they are
    // released to the client one block at a time (BlockSequencer).
    explicit CanonicalStreamBuilder(bool sequenced = false) : m_sequenced(sequenced) {}

    // The running usage: Start, Done and Error carry it.
    Usage &usage() { return m_usage; }
    bool started() const { return m_started; }
    bool finished() const { return m_finished; }

    // Emits Start unless it was emitted already.
    void start(const QString &responseId = {});

    // Opens a block under the upstream's own `key` (its block, output or tool index) and
    // emits its Start carrying `block`; returns the open block. A block already open under
    // `key` is returned as it is. Opening starts the stream if it was not started.
    // A returned block (and find()'s) stays valid until the next open() or close().
    ContentBlock &open(int key, const ContentBlock &block);
    ContentBlock &open(int key, BlockType type);
    // The block open under `key`, or nullptr.
    ContentBlock *find(int key);
    // Appends `delta` to the block's text (a tool call: its argument text) and emits the
    // delta. Nothing for an empty delta or a key with no open block.
    void append(int key, const QString &delta);
    // Emits the End of the block under `key`, when one is open.
    void close(int key);
    // Closes every open block, in key order.
    void closeAll();

    // Ends the stream with Done: closes what is open first.
    void done(StopReason reason, const QJsonObject &native = {}, const QByteArray &nativeUsageJson = {},
              const QString &stopSequence = {});
    // Ends the stream with Error, with no End for blocks still open (the answer is broken).
    // The upstream named its model or its answer with what may not be echoed (wire::namesAreEchoable):
    // a 502, so the attempt fails as server_error and the next candidate may answer.
    void failUnechoableNames();
    void fail(const QString &message, const QString &errorType = {}, std::optional<int> status = {},
              StopReason reason = StopReason::Error);
    // The body ended: an unfinished stream fails ("stream ended before completion").
    void endOfBody();

    // The events produced since the last take().
    QList<StreamEvent> take();

private:
    struct Open {
        int key = 0;
        int contentIndex = -1;
        ContentBlock block;
    };
    void push(StreamEvent &&event);

    Open *at(int key);
    // By the upstream's key, in key order. Most streams have one block open at a time (Anthropic
    // and Google close each before the next): it is kept inside the builder, no allocation per
    // block. More (parallel tool calls, text before them) move to one heap array.
    QVarLengthArray<Open, 1> m_open;
    QList<StreamEvent> m_out;
    model::BlockSequencer m_sequencer;
    Usage m_usage;
    int m_nextContentIndex = 0;
    bool m_sequenced = false;
    bool m_started = false;
    bool m_finished = false;
};

} // namespace sw::upstream
