#pragma once
// Anthropic Messages SSE -> canonical events.

#include "upstream/upstream_adapter.h"

#include <QHash>

namespace sw::upstream {

class AnthropicStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

    // HTTP-like status for an Anthropic error type (overloaded_error -> 529), nullopt when unknown.
    static std::optional<int> statusForErrorType(const QString &type);

private:
    struct OpenBlock {
        int contentIndex = -1;
        model::ContentBlock block;
    };
    void readUsage(const QJsonObject &usage);
    void closeAll(QList<model::StreamEvent> &out);
    model::StreamEvent endEvent(const OpenBlock &open) const;
    model::StreamEvent terminalEvent();

    QHash<int, OpenBlock> m_open; // by Anthropic block index
    int m_nextContentIndex = 0;
    model::Usage m_usage;
    QString m_stopReason; // raw stop_reason from message_delta
    bool m_started = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
