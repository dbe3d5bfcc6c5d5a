#pragma once
// What every upstream stream decoder does once it has read a frame: keep the blocks it
// has open, number them, and write the canonical events in a valid order. Start comes
// once, before anything else; each block's End carries the whole block (a tool call's
// arguments parsed); one terminal event (Done or Error) ends the stream and anything
// after it is dropped. A decoder only says what the upstream meant.

#include "core/model/block_sequencer.h"
#include "core/model/chat.h"
#include "core/wire/error_body.h"

#include <QList>
#include <QString>

#include <map>

namespace sw::upstream {

using model::BlockType;
using model::ContentBlock;
using model::StopReason;
using model::StreamEvent;
using model::Usage;

class CanonicalStreamBuilder final {
public:
    // The most content blocks one answer may have. Past it the upstream is hostile or broken
    // (60 000 parallel tool calls kept open): the stream fails as an unreadable one would, a 502
    // (server_error) that fails over before commit and cuts the client's stream after it.
    static constexpr int kMaxContentBlocks = 4096;
    // The most bytes the sequencer may hold back for blocks waiting behind the live one (a tool
    // call streaming while an earlier one stays open). Held events are not in the client's queue,
    // so backpressure does not see them: past this the stream fails as above. (limits.maxHoldBytes'
    // default: what one request may buffer for a client.)
    static constexpr qint64 kMaxSequencedHoldBytes = 8LL * 1024 * 1024;
    // The longest tool-call argument text whose End carries it parsed as well (ContentBlock::arguments).
    // Past it the End carries the text alone: a Chat or Responses client is written the text as it
    // came, and only an encoder that needs the object parses it (Anthropic's `input`). A second
    // form of a 60 MB text, made at the end of the answer on the engine thread, cost seconds and
    // hundreds of MB for clients that never read it.
    static constexpr qsizetype kMaxParsedArgumentsChars = 1024 * 1024;

    // `sequenced`: the upstream may interleave blocks (parallel tool calls); they are
    // released to the client one block at a time (BlockSequencer).
    explicit CanonicalStreamBuilder(bool sequenced = false) : m_sequenced(sequenced) {}

    // The running usage: Start, Done and Error carry it.
    Usage &usage() { return m_usage; }
    const Usage &usage() const { return m_usage; }
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
    // Whether the block under `key` has text or arguments: given at open, or appended (kept or not).
    bool hasText(int key) const;
    // false: a block's deltas (text, thinking, a tool call's arguments) are emitted but not kept,
    // and its End carries only what the block was opened with. For a streaming client whose format
    // needs no block whole (Anthropic, Chat, a same-API passthrough): the answer costs what is in
    // flight, not its length. Their encoders write a call's arguments from its deltas.
    void setKeepsText(bool keeps) { m_keepsText = keeps; }
    // Emits the End of the block under `key`, when one is open.
    void close(int key);
    // Closes every open block, in key order.
    void closeAll();
    // The stream failed over one of the builder's bounds (kMaxContentBlocks,
    // kMaxSequencedHoldBytes): the frame that crossed it is not relayed to a same-API client.
    bool failedOverBound() const { return m_failedOverBound; }
    // Blocks opened so far (each numbered by its contentIndex).
    int blockCount() const { return m_nextContentIndex; }

    // Ends the stream with Done: closes what is open first.
    void done(StopReason reason, const QJsonObject &native = {}, const QByteArray &nativeUsageJson = {},
              const QString &stopSequence = {});
    // Ends the stream with Done and the Refusal reason. `why` names the provider's reason in words
    // ("Google blocked the answer (finishReason SAFETY)"; StreamEvent::errorMessage): pi tells a
    // refusal as an error and says it when the answer holds no refusal text of its own.
    void refuse(const QString &why, const QJsonObject &native = {}, const QByteArray &nativeUsageJson = {});
    // Ends the stream with Error, with no End for blocks still open (the answer is broken).
    // The upstream named its model or its answer (wire::namesAreEchoable), or gave a tool call a
    // name or id (wire::membersAreEchoable), with what may not be echoed: a 502, so the attempt
    // fails as server_error and the next candidate may answer. The message says which, never what.
    enum class Unechoable { ModelOrAnswer, ToolCall };
    void failUnechoableNames(Unechoable what = Unechoable::ModelOrAnswer);
    // `saidFinal`: the upstream said its failure is final (StreamEvent::errorFinal).
    void fail(const QString &message, const QString &errorType = {}, std::optional<int> status = {},
              StopReason reason = StopReason::Error, const wire::GoogleLimit &limit = {}, bool saidFinal = false);
    // The body ended: an unfinished stream fails ("stream ended before completion").
    void endOfBody();

    // The events produced since the last take().
    QList<StreamEvent> take();

private:
    struct Open {
        int contentIndex = -1;
        ContentBlock block;
        bool said = false; // a delta was appended
    };
    void push(StreamEvent &&event);
    StreamEvent endEvent(Open &&o);
    // Ends the stream for a bound of the builder's own: what the sequencer holds is dropped.
    void failOverBound(const QString &message);

    // By the upstream's key, in key order: O(log n) to find, open or close one, however many a
    // hostile upstream keeps open (at most kMaxContentBlocks).
    std::map<int, Open> m_open;
    ContentBlock m_refused; // what open() returns once the stream has failed over a bound
    QList<StreamEvent> m_out;
    QList<StreamEvent> m_released; // sequenced events released by a failure before take()
    model::BlockSequencer m_sequencer;
    Usage m_usage;
    int m_nextContentIndex = 0;
    bool m_sequenced = false;
    bool m_keepsText = true;
    bool m_failedOverBound = false;
    bool m_started = false;
    bool m_finished = false;
    QString m_refusal; // refuse()'s reason, for the Done it ends with
};

} // namespace sw::upstream
