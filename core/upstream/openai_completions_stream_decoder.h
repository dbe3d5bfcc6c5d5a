#pragma once
// OpenAI Chat Completions SSE (and compatible servers) -> canonical events.

#include "upstream/upstream_adapter.h"

#include <QHash>

namespace sw::upstream {

class OpenAICompletionsStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

    // HTTP-like status for an OpenAI error code/type ("rate_limit_exceeded" -> 429), nullopt when unknown.
    static std::optional<int> statusForError(const QJsonObject &error);

private:
    // Chat Completions has no block boundaries: one block is open at a time and a
    // delta of another kind (or another tool index) closes it.
    struct OpenBlock {
        int contentIndex = -1;
        int toolIndex = -1;
        model::ContentBlock block;
    };
    void startBlock(model::BlockType type, int toolIndex, QList<model::StreamEvent> &out);
    void closeBlock(QList<model::StreamEvent> &out);
    void readUsage(const QJsonObject &usage);
    model::StreamEvent terminalEvent();

    std::optional<OpenBlock> m_open;
    int m_nextContentIndex = 0;
    model::Usage m_usage;
    QString m_finishReason;
    bool m_started = false;
    bool m_sawRefusal = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
