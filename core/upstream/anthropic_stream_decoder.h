#pragma once
// Anthropic Messages SSE -> canonical events.

#include "upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonObject>
#include <QMap>

namespace sw::upstream {

class AnthropicStreamDecoder final : public StreamDecoder {
public:
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;

private:
    struct OpenBlock {
        int contentIndex = -1;
        model::ContentBlock block;
    };
    void readUsage(const QJsonObject &usage);
    void closeAll(QList<model::StreamEvent> &out);
    model::StreamEvent endEvent(const OpenBlock &open) const;
    model::StreamEvent terminalEvent();

    // The same-API answer (StreamEvent::native): message_start's message, every block as
    // the API defines it (server tool blocks, citations too), message_delta's fields.
    struct NativeBlock {
        QJsonObject block;
        QString text;        // text / thinking
        QString partialJson; // tool_use / server_tool_use input
        QString signature;
    };
    void nativeFeed(const QString &type, const QJsonObject &data);
    QJsonObject nativeMessage() const;
    QJsonObject m_nativeMessage;
    QMap<int, NativeBlock> m_nativeBlocks; // by Anthropic block index
    qint64 m_nativeChars = 0;
    bool m_nativeOverflow = false; // past kMaxNativeChars: the canonical answer is used

    QHash<int, OpenBlock> m_open; // by Anthropic block index
    int m_nextContentIndex = 0;
    model::Usage m_usage;
    QString m_stopReason; // raw stop_reason from message_delta
    bool m_started = false;
    bool m_terminal = false;
};

} // namespace sw::upstream
