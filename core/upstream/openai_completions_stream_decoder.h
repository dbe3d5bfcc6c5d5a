#pragma once
// OpenAI Chat Completions SSE (and compatible servers) -> canonical events.

#include "model/block_sequencer.h"
#include "upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMap>

namespace sw::upstream {

class OpenAICompletionsStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

    // The chunk a Chat stream ends with when stream_options.include_usage is on: no
    // choices, a usage object. The gateway always asks for usage (it counts tokens), so
    // on a passthrough this frame must not reach a client that did not ask for it.
    static bool isUsageOnlyChunk(const QByteArray &data);

private:
    // Text and thinking: one block open at a time, a delta of the other kind closes it.
    // Tool calls: one block per `index`, open until the choice finishes, because
    // servers may interleave parallel calls (index 0, 1, 0, 1 …); the sequencer puts
    // the blocks back in order for the client.
    struct OpenBlock {
        int contentIndex = -1;
        int toolIndex = -1;
        model::ContentBlock block;
    };
    QList<model::StreamEvent> decode(const SseEvent &event);
    void startBlock(model::BlockType type, QList<model::StreamEvent> &out);
    void closeBlock(QList<model::StreamEvent> &out);
    void closeTool(int toolIndex, QList<model::StreamEvent> &out);
    void closeAll(QList<model::StreamEvent> &out);
    void toolDelta(const QJsonObject &call, QList<model::StreamEvent> &out);
    void readUsage(const QJsonObject &usage);
    model::StreamEvent terminalEvent();

    // What a same-API JSON answer needs beyond the canonical message (StreamEvent::native):
    // the upstream's usage object, system_fingerprint, service_tier, the refusal text,
    // logprobs and annotations, collected as they stream.
    void collectNative(const QJsonObject &chunk, const QJsonObject &choice, const QJsonObject &delta,
                       qsizetype chunkBytes);
    QJsonObject m_native;
    QJsonArray m_logprobsContent;
    QJsonArray m_logprobsRefusal;
    QJsonArray m_annotations;
    QString m_refusal;
    bool m_sawLogprobs = false;
    qint64 m_nativeBytes = 0;
    bool m_nativeOverflow = false;

    model::BlockSequencer m_sequencer;
    QMap<int, OpenBlock> m_tools; // open tool calls by index
    std::optional<OpenBlock> m_open;
    int m_nextContentIndex = 0;
    model::Usage m_usage;
    QString m_finishReason;
    bool m_started = false;
    bool m_sawRefusal = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
