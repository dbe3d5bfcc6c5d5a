#pragma once
// Canonical events -> OpenAI Responses SSE (event: + data: frames with sequence_number).

#include "core/formats/inbound_codec.h"

#include <QHash>
#include <optional>

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class OpenAIResponsesStreamEncoder final : public StreamEncoder {
public:
    explicit OpenAIResponsesStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;
    // The upstream's response id and its last sequence_number: an error after a cut goes on from
    // them (no second response.created, numbers that keep rising).
    void followPassthrough(QByteArrayView frame) override;

private:
    struct Item {
        int outputIndex = -1;
        QString id;
        model::BlockType type = model::BlockType::Text;
        model::ContentBlock block; // what was streamed so far
        bool argumentsStreamed = false;
        bool custom = false; // a call of a client `custom` tool: a custom_tool_call item
    };
    // One event frame: beginEvent writes its type and sequence number, the caller the
    // payload's other fields, endEvent closes it.
    void beginEvent(wire::JsonWriter &w, QLatin1String type);
    static void endEvent(wire::JsonWriter &w);
    // An output_item.done frame for the finished item `itemJson`, which joins the output.
    // A reasoning item opens, its summary empty yet.
    void reasoningItemAdded(wire::JsonWriter &w, int outputIndex, const QString &id);
    void itemDone(wire::JsonWriter &w, int outputIndex, const QByteArray &itemJson);
    void startOnce(wire::JsonWriter &w);
    void openItem(wire::JsonWriter &w, int contentIndex, model::BlockType type, const model::ContentBlock &start);
    void closeItem(wire::JsonWriter &w, int contentIndex, const model::ContentBlock &end);
    void closeAll(wire::JsonWriter &w);
    // A message's or call's output_item.done waits for the next event: the item the upstream's
    // max_tokens cut is `incomplete`, and only the stop reason after it says so.
    struct PendingCall {
        int outputIndex = -1;
        QString id, callId, name, value; // a message: its id and text
        bool custom = false;
        bool message = false;
        bool refusal = false; // a message whose part is the model's refusal
    };
    void flushPendingCall(wire::JsonWriter &w, QLatin1String status);
    // The bytes `event`'s frames will take, about: a closing event's repeat what was streamed.
    qsizetype roomFor(const model::StreamEvent &event) const;

    EncodeInfo m_info;
    int m_sequence = 0;
    bool m_started = false;
    bool m_finished = false;
    bool m_refused = false;      // a refusal part was written: the answer completed (OpenAI's own status)
    bool m_errorRelayed = false; // a passthrough upstream's `error` event reached the client
    QHash<int, Item> m_open;     // by canonical content index
    QByteArray m_output;         // finished output items as JSON, in order, comma-separated
    int m_nextOutputIndex = 0;
    std::optional<PendingCall> m_pendingCall;
};

} // namespace sw::formats
