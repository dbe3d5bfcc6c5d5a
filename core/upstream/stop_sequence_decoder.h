#pragma once
// Stop sequences for an API that has no such field (the Responses API): the gateway ends the
// answer itself where the client's stop sequence first appears in the text, as the API the
// client spoke would have (formats/translation_rules.md, "Stop sequences").

#include "core/upstream/upstream_adapter.h"

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
    // Passes on the pending text that can no longer begin a stop sequence, or, when one is in it,
    // ends the answer there. Returns false once the answer has ended.
    bool release(QList<model::StreamEvent> &out);
    // Passes the first `chars` characters held back on as a delta of the open text block.
    void passOnPending(QList<model::StreamEvent> &out, qsizetype chars);

    QStringList m_stops;
    qsizetype m_holdBack = 0;       // the longest stop sequence's length, less one
    model::StreamEvent m_textStart; // the open text block's start (contentIndex -1: none open)
    QString m_sent;                 // its text passed on
    QString m_pending;              // its text held back
    model::Usage m_usage;           // the latest usage the upstream reported
    qint64 m_inputEstimate = 0;     // tokens, for an answer cut before the upstream reported usage
    qint64 m_producedChars = 0;     // the deltas' characters so far (text, thinking, arguments)
    bool m_stopped = false;
};

} // namespace sw::upstream
