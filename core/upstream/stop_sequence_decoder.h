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
// the usage known so far), and everything the upstream sends after is dropped. Thinking and tool
// calls pass untouched: stop sequences apply to the answer's text.
class StopSequenceDecoder final : public StreamDecoder {
public:
    StopSequenceDecoder(std::unique_ptr<StreamDecoder> inner, QStringList stops);
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;
    bool lastWasUsageOnly() const override { return m_inner->lastWasUsageOnly(); }

private:
    QList<model::StreamEvent> filter(QList<model::StreamEvent> events);
    // Passes on the pending text that can no longer begin a stop sequence, or, when one is in it,
    // ends the answer there. Returns false once the answer has ended.
    bool release(QList<model::StreamEvent> &out);
    // Passes the first `chars` characters held back on as a delta of the open text block.
    void passOnPending(QList<model::StreamEvent> &out, qsizetype chars);

    std::unique_ptr<StreamDecoder> m_inner;
    QStringList m_stops;
    qsizetype m_holdBack = 0;       // the longest stop sequence's length, less one
    model::StreamEvent m_textStart; // the open text block's start (contentIndex -1: none open)
    QString m_sent;                 // its text passed on
    QString m_pending;              // its text held back
    model::Usage m_usage;           // the latest usage the upstream reported
    bool m_stopped = false;
};

} // namespace sw::upstream
