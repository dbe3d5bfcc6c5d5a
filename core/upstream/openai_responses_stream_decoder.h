#pragma once
// OpenAI Responses SSE -> canonical events.

#include "model/block_sequencer.h"
#include "upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonObject>
#include <QMap>

namespace sw::upstream {

class OpenAIResponsesStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

private:
    // One canonical block per output item (messages: per content part).
    struct OpenBlock {
        int contentIndex = -1;
        model::ContentBlock block;
        int summaryParts = 0; // reasoning: summary parts seen, to separate them
    };
    QList<model::StreamEvent> decode(const SseEvent &event);
    QList<model::StreamEvent> decodeFinish();
    OpenBlock &open(int outputIndex, model::BlockType type, QList<model::StreamEvent> &out);
    void close(int outputIndex, QList<model::StreamEvent> &out);
    void closeAll(QList<model::StreamEvent> &out);
    void readUsage(const QJsonObject &usage);
    model::StreamEvent errorEvent(const QString &code, const QString &message);

    // Parallel function calls may interleave their argument deltas by output_index:
    // the sequencer gives the client one block at a time.
    model::BlockSequencer m_sequencer;
    QHash<int, OpenBlock> m_open; // by output_index
    int m_nextContentIndex = 0;
    model::Usage m_usage;
    QString m_pendingErrorCode; // from an `error` event, reported with response.failed
    QString m_pendingErrorMessage;
    // Finished output items by output_index, for a response.completed whose `output` is
    // shorter than what was streamed (some servers send it empty): StreamEvent::native.
    QMap<int, QJsonObject> m_doneItems;
    qint64 m_doneItemBytes = 0;
    bool m_sawToolCall = false;
    bool m_sawRefusal = false; // a `refusal` content part: the model declined
    bool m_started = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
