#pragma once
// OpenAI Responses SSE -> canonical events.

#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <string_view>

#include <rapidjson/fwd.h>

namespace sw::upstream {

class OpenAIResponsesStreamDecoder final : public StreamDecoder {
public:
    // With NativeBody::Skip the finished output items are not kept to rebuild a Responses
    // object (a streaming client has them from its own events).
    explicit OpenAIResponsesStreamDecoder(NativeBody native = NativeBody::Keep)
        : m_keepNative(native == NativeBody::Keep) {}
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;
    void setKeepsText(bool keeps) override { m_out.setKeepsText(keeps); }
    model::Usage usage() const override { return m_out.usage(); }
    bool lastWasUnreadable() const override { return m_lastUnreadable || m_out.failedOverBound(); }
    std::optional<QByteArray> lastEventName() const override { return m_lastEventName; }
    // An event naming a call the server gave `"call_id": ""` or none, or one an earlier call of the
    // answer has (its item: added, done; the response's output), with the call_id made up for it.
    QByteArray lastRelayData() const override { return m_lastRelayData; }

private:
    // One canonical block per output item (messages: per content part), keyed by output_index.
    // Parallel function calls may interleave their argument deltas by output_index: the
    // builder's sequencer gives the client one block at a time.
    void decode(const SseEvent &event, const QByteArray &raw);
    void itemAdded(int outputIndex, const rapidjson::Value *item);
    void itemDone(int outputIndex, const rapidjson::Value *item);
    void completed(std::string_view type, const rapidjson::Value *response);
    void readUsage(const rapidjson::Value *usage);
    void fail(const QString &code, const QString &message);
    // A call item (`item` at `outputIndex`), or each of a response's output items, with the
    // call_id made up for it when it has one; the event's data so (empty when nothing changed).
    QJsonObject withMadeUpCallId(QJsonObject item, int outputIndex) const;
    QJsonArray withMadeUpCallIds(QJsonArray output) const;
    QByteArray withMadeUpCallIds(const QByteArray &raw, int outputIndex) const;

    CanonicalStreamBuilder m_out{/*sequenced=*/true};
    QHash<int, int> m_summaryParts; // reasoning: summary parts seen per output_index, to separate them
    QString m_pendingErrorCode;     // from an `error` event, reported with response.failed
    QString m_pendingErrorMessage;
    bool m_pendingErrorFinal = false; // the error said it is final (wire::kShouldRetryMember)
    // Finished output items by output_index, for a response.completed whose `output` is
    // shorter than what was streamed (some servers send it empty): StreamEvent::native.
    QMap<int, QJsonObject> m_doneItems;
    qint64 m_doneItemBytes = 0;
    bool m_keepNative = true;
    bool m_lastUnreadable = false;
    std::optional<QByteArray> m_lastEventName; // UpstreamAdapter::relayEventName of the event last fed
    // The call ids a client is told instead of the server's, by output_index and by item id: made
    // up for calls the server named by none, or a repeat made unique.
    QHash<int, QString> m_madeUpCallIds;
    QHash<QString, QString> m_madeUpCallIdsByItem;
    QSet<QString> m_callIds;              // the call ids this answer's calls are told by
    QHash<QString, int> m_callIdSuffixes; // where renaming a repeat of m_callIds goes on (wire::uniqueToolId)
    QByteArray m_lastRelayData;
    // Message items (by output_index) whose text or refusal arrived: a delta, or a finished part.
    // The finished item's own text is read only for the others.
    QSet<int> m_textSaid;
    // The output items events named, by output_index and by a hash of their id: response.completed
    // reads the others from its output. Once an event named its item by no index or no id, or past
    // kMaxAnnounced items, which items streamed cannot be told (m_streamedUnknown) and none is read
    // there: said again, its text would be doubled. Bounded, so an upstream naming a new item in
    // every empty event holds no more than this.
    static constexpr qsizetype kMaxAnnounced = 1024;
    QSet<int> m_announced;
    QSet<size_t> m_announcedIds;
    bool m_streamedUnknown = false;
    bool m_sawToolCall = false;
    bool m_sawRefusal = false; // a `refusal` content part: the model declined
};

} // namespace sw::upstream
