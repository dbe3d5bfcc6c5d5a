#pragma once
// Stop sequences for an API that has no such field (the Responses API): the gateway ends the
// answer itself where the client's stop sequence first appears in the text, as the API the
// client spoke would have (formats/translation_rules.md, "Stop sequences").

#include "core/upstream/upstream_adapter.h"

#include <QHash>
#include <QStringList>
#include <memory>

namespace sw::upstream {

// Wraps an upstream's decoder. Text is passed on as it comes, except the last characters that
// could still begin a stop sequence (one less than the longest), which wait for the next delta.
// At the first stop sequence the text before it ends its block, the answer ends with Done (stop,
// the sequence, the usage), and everything the upstream sends after is dropped. Thinking and tool
// calls pass untouched: stop sequences apply to the answer's text.
//
// The usage: an API without stop sequences (Responses) reports it only when its answer completes,
// which a cut answer never does, and the provider bills what it generated all the same. A count
// the upstream did not report before the cut is estimated, four characters a token: the input from
// `inputTokensEstimate` (the caller's, from the request it sent), the output from what the model
// produced up to the cut (text, thinking, tool-call arguments). Zero would let any client answer
// free of its budget by ending its answers with a stop sequence of its own.
class StopSequenceDecoder final : public WrappingDecoder {
public:
    StopSequenceDecoder(std::unique_ptr<StreamDecoder> inner, QStringList stops, qint64 inputTokensEstimate = 0);
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

private:
    QList<model::StreamEvent> filter(QList<model::StreamEvent> events);
    // Reads the last `fresh` characters of the pending text (a delta just added); passes on the
    // pending text that can no longer begin a stop sequence, or, when one ends in it, ends the
    // answer there. Returns false once the answer has ended.
    bool release(QList<model::StreamEvent> &out, qsizetype fresh);
    // Passes the first `chars` characters held back on as a delta of the open text block.
    void passOnPending(QList<model::StreamEvent> &out, qsizetype chars);
    // The next state of the automaton after the code unit `c`.
    int step(int state, char16_t c) const;

    QStringList m_stops;
    qsizetype m_holdBack = 0; // the longest stop sequence's length, less one
    // The stop sequences as one automaton (Aho-Corasick): the text is read once, a code unit at a
    // time, whatever the number of sequences. Searching for each sequence in each delta cost
    // sequences x deltas: a million of them held the engine thread 14 ms a delta (probe X2-F2).
    // A state is a node of the sequences' prefix tree: the longest one the text read ends with.
    struct Node {
        int parent = 0;
        char16_t unit = 0; // the code unit from the parent
        int fallback = 0;  // the node of the longest proper suffix of this one's text that is a node too
        int stop = -1;     // m_stops' index of the longest sequence this node's text ends with, or -1
    };
    QList<Node> m_nodes;            // [0]: the root, the empty text
    QHash<quint64, int> m_children; // (node << 16 | code unit) -> child node
    int m_state = 0;                // where the open block's text read so far leaves the automaton
    model::StreamEvent m_textStart; // the open text block's start (contentIndex -1: none open)
    QString m_sent;                 // its text passed on
    QString m_pending;              // its text held back
    model::Usage m_usage;           // the latest usage the upstream reported
    qint64 m_inputEstimate = 0;     // tokens, for an answer cut before the upstream reported usage
    qint64 m_producedChars = 0;     // the deltas' characters so far (text, thinking, arguments)
    bool m_stopped = false;
};

} // namespace sw::upstream
