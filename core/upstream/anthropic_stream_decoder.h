#pragma once
// Anthropic Messages SSE -> canonical events.

#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <string_view>

#include <rapidjson/fwd.h>

namespace sw::upstream {

class AnthropicStreamDecoder final : public StreamDecoder {
public:
    // With NativeBody::Skip the answer is never rebuilt in Anthropic's own shape (a streaming
    // client, or one of another API): nothing is kept for it.
    explicit AnthropicStreamDecoder(NativeBody native = NativeBody::Keep) : m_keepNative(native == NativeBody::Keep) {}
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;
    void setKeepsText(bool keeps) override { m_out.setKeepsText(keeps); }
    model::Usage usage() const override { return m_out.usage(); }
    bool lastWasUnreadable() const override { return m_lastUnreadable || m_out.failedOverBound(); }
    bool lastWasUsageOnly() const override { return m_lastUsageOnly; }
    bool lastWasKept() const override { return m_lastKept; }
    std::optional<QByteArray> lastEventName() const override { return m_lastEventName; }
    QByteArray lastRelayData() const override { return m_lastRelayData; }
    // message_delta said why the answer stopped: a reset before message_stop loses nothing of it, as a
    // Chat stream's after its finish_reason does not (probe S1 F2: a whole, billed answer was failed
    // over from and its host marked).
    bool endSeen() const override { return !m_stopReason.isEmpty(); }

private:
    void decode(const SseEvent &event);
    void readUsage(const rapidjson::Value *usage);
    void openBlock(int index, const rapidjson::Value *contentBlock);
    void appendDelta(int index, const rapidjson::Value *delta);
    // The input a tool_use's content_block_start held (m_startInputs), as the call's arguments when
    // no input_json_delta said them.
    void sayStartInput(int index);
    void end();

    // The same-API answer (StreamEvent::native): message_start's message, every block as
    // the API defines it (server tool blocks, citations too), message_delta's fields.
    struct NativeBlock {
        QJsonObject block;
        QString text;        // text / thinking
        QString partialJson; // tool_use / server_tool_use input
        QString signature;
        QJsonArray citations; // citations_delta, appended in place (the block's own copy was rebuilt per delta)
    };
    void nativeFeed(std::string_view type, const rapidjson::Value *data);
    QJsonObject nativeMessage() const;
    QJsonObject m_nativeMessage;
    QMap<int, NativeBlock> m_nativeBlocks; // by Anthropic block index
    qint64 m_nativeChars = 0;
    bool m_nativeOverflow = false; // past kMaxNativeChars: the canonical answer is used

    CanonicalStreamBuilder m_out; // blocks keyed by Anthropic's block index
    QString m_stopReason;         // raw stop_reason from message_delta
    QString m_stopSequence;       // the stop_sequence it named
    bool m_keepNative = true;
    bool m_lastUnreadable = false;
    bool m_lastUsageOnly = false;              // a message_delta of counts alone, no stop reason
    bool m_lastKept = false;                   // a signature delta, kept for its block's End
    std::optional<QByteArray> m_lastEventName; // UpstreamAdapter::relayEventName of the event last fed
    // The id openBlock gave a tool_use the client is told instead of the server's: made up for one
    // that came without, or a repeat made unique.
    QString m_relayedId;
    QSet<QString> m_callIds;              // the ids this answer's calls are told by
    QHash<QString, int> m_callIdSuffixes; // where renaming a repeat of m_callIds goes on (wire::uniqueToolId)
    QByteArray m_lastRelayData;           // the frame as relayed, when it differs (m_relayedId)
    // By block index, the compact JSON of a tool_use's input its content_block_start already held
    // (Anthropic's own is {}, then input_json_delta): until the block ends.
    QMap<int, QString> m_startInputs;
};

} // namespace sw::upstream
