#pragma once
// OpenAI Chat Completions SSE (and compatible servers) -> canonical events.

#include "core/upstream/canonical_stream_builder.h"
#include "core/upstream/upstream_adapter.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QSet>

#include <array>
#include <optional>

#include <rapidjson/fwd.h>

namespace sw::upstream {

class OpenAICompletionsStreamDecoder final : public StreamDecoder {
public:
    // With NativeBody::Skip nothing is kept to rebuild a Chat completion object (logprobs,
    // annotations, system_fingerprint…): a streaming client gets those in its own chunks.
    explicit OpenAICompletionsStreamDecoder(NativeBody native = NativeBody::Keep)
        : m_keepNative(native == NativeBody::Keep) {}
    QList<model::StreamEvent> feed(const SseEvent &event) override;
    QList<model::StreamEvent> finish() override;
    void setKeepsText(bool keeps) override { m_out.setKeepsText(keeps); }
    model::Usage usage() const override { return m_out.usage(); }
    bool endSeen() const override { return !m_finishReason.isEmpty(); }

    // The chunk a Chat stream ends with when stream_options.include_usage is on: no
    // choices, a usage object (and no error). The gateway always asks for usage (it counts
    // tokens), so on a passthrough this frame must not reach a client that did not ask for it.
    bool lastWasUsageOnly() const override { return m_lastUsageOnly; }
    bool lastWasUnreadable() const override { return m_lastUnreadable || m_out.failedOverBound(); }
    // A chunk naming a call with an id over Chat's 40 (vLLM's are 46), with the id bounded; one
    // opening a call the server named by none, with the id made up for it.
    QByteArray lastRelayData() const override { return m_lastRelayData; }
    bool lastFailedOnAPlainFrame() const override { return m_lastFailedOnPlainFrame; }
    // Chat streams have no event lines: one the upstream sent goes nowhere (the openai SDK throws
    // on `event: error` and hands other names over unparsed). The decoder reads only the data.
    std::optional<QByteArray> lastEventName() const override {
        return m_lastHadEventLine ? std::optional<QByteArray>(QByteArray()) : std::nullopt;
    }

private:
    // Text and thinking: one block open at a time (key kProse), a delta of the other kind
    // closes it. Tool calls: one block per `index`, open until the choice finishes, because
    // servers may interleave parallel calls (index 0, 1, 0, 1 …); the builder's sequencer
    // puts the blocks back in order for the client.
    static constexpr int kProse = std::numeric_limits<int>::min();
    void decode(const SseEvent &event);
    void prose(model::BlockType type, const QString &text, bool refusal = false);
    void contentParts(const rapidjson::Value &parts); // delta.content as a list of chunks (Mistral's)
    // Reads one entry of a chunk's tool_calls. Returns what a same-API client is told as that
    // entry's id instead of what the server sent (empty: no id), or nullopt for the entry as sent.
    std::optional<QString> toolDelta(const rapidjson::Value *call);
    static void callSignature(const rapidjson::Value *call, model::ContentBlock &block);
    void readUsage(const rapidjson::Value *usage);
    void end();

    // What a same-API JSON answer needs beyond the canonical message (StreamEvent::native):
    // the upstream's usage object, system_fingerprint, service_tier, the refusal text,
    // logprobs and annotations, collected as they stream. The usual usage object goes as text
    // (StreamEvent::nativeUsageJson), beside the object.
    void collectNative(const rapidjson::Value *chunk, const rapidjson::Value *choice, const rapidjson::Value *delta,
                       qsizetype chunkBytes);
    QJsonObject nativeAnswer() const;
    void mergeReasoningDetail(const QJsonObject &piece); // one streamed reasoning_details entry
    QString m_systemFingerprint;
    QString m_serviceTier;
    void keepNativeUsage(const rapidjson::Value &usage);
    QByteArray m_usageJson; // the upstream's usage object as text (StreamEvent::nativeUsageJson), or
    QJsonObject m_usage;    // as an object when its text would not be written the same way
    QJsonArray m_logprobsContent;
    QJsonArray m_logprobsRefusal;
    QJsonArray m_annotations;
    // OpenRouter's signed reasoning (delta.reasoning_details), merged by entry as it streams: the
    // JSON answer carries it as the stream did, for the client to send back on a tool loop. The
    // entries before the open one, and the open one: its growing strings (text, summary, data) kept
    // apart and appended in place, the rest of its members in `rest`.
    QJsonArray m_reasoningDetails;
    struct OpenDetail {
        QJsonObject rest;
        std::array<std::optional<QString>, 3> grown; // text, summary, data
        QJsonObject whole() const;
    };
    std::optional<OpenDetail> m_openDetail;
    QJsonArray reasoningDetails() const;
    QString m_refusal;
    bool m_sawLogprobs = false;
    qint64 m_nativeBytes = 0;
    bool m_nativeOverflow = false;
    bool m_keepNative = true;

    CanonicalStreamBuilder m_out{/*sequenced=*/true};
    QSet<int> m_madeUpIds;                // the tool indexes whose open call has an id made up here
    QSet<QString> m_callIds;              // the ids this answer's calls are told by
    QHash<QString, int> m_callIdSuffixes; // where renaming a repeat of m_callIds goes on (wire::uniqueToolId)
    // The tool indexes whose open call the client is told by another id than the server's (a repeat
    // made unique), with the server's.
    QHash<int, QString> m_renamedIds;
    QString m_finishReason;
    bool m_sawRefusal = false;
    bool m_sawToolCall = false; // the answer holds a named call, whatever its finish_reason says
    QString m_unreadPart;       // the type of the first content part not read (contentParts), if any
    bool m_lastUsageOnly = false;
    bool m_lastUnreadable = false;
    bool m_lastHadEventLine = false;
    QByteArray m_lastRelayData;
    bool m_lastFailedOnPlainFrame = false;
};

} // namespace sw::upstream
