#pragma once
// Canonical events -> Anthropic Messages SSE (event: + data: frames).

#include "core/formats/inbound_codec.h"
#include "core/model/event_accumulator.h"

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class AnthropicMessagesStreamEncoder final : public StreamEncoder {
public:
    explicit AnthropicMessagesStreamEncoder(const EncodeInfo &info) : m_info(info) {}
    QByteArray encode(const model::StreamEvent &event) override;
    QByteArray encodeError(const model::GatewayError &error) override;
    void followPassthrough(QByteArrayView frame) override {
        m_relayedStop = m_relayedStop || frame.startsWith(QByteArrayView("event: message_stop\n")) ||
                        frame.startsWith(QByteArrayView("data: {\"type\":\"message_stop\""));
    }
    QByteArray endPassthrough() override {
        return m_relayedStop ? QByteArray() : QByteArray("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    }

private:
    bool m_relayedStop = false;
    // The content block a content_block_start frame announces.
    struct BlockHead {
        QLatin1String type;            // text, thinking, redacted_thinking, tool_use
        const QString *data = nullptr; // redacted_thinking: its data
        const QString *id = nullptr;   // tool_use
        const QString *name = nullptr; // tool_use
    };
    void messageStartOnce(wire::JsonWriter &w, const model::Usage &usage);
    void openBlock(wire::JsonWriter &w, int contentIndex, const BlockHead &head);
    void ensureOpen(wire::JsonWriter &w, int contentIndex, model::BlockType type);
    void closeBlock(wire::JsonWriter &w);
    // A content_block_delta frame for the open block: {type: deltaType, <field>: text}.
    void delta(wire::JsonWriter &w, QLatin1String deltaType, QLatin1String field, const QString &text);
    void openThenDelta(wire::JsonWriter &w, int contentIndex, model::BlockType type, QLatin1String deltaType,
                       QLatin1String field, const QString &text);

    EncodeInfo m_info;
    QHash<QString, int> m_toolIdSuffixes; // where renaming the calls goes on (AnthropicMessagesCodec::clientToolId)
    bool m_started = false;
    bool m_finished = false;
    // Canonical index of the open block; kNoBlock when none, kSignatureCarrier for the empty thinking
    // block that carries a Google function call's signature (it has no canonical index of its own).
    static constexpr int kNoBlock = -1;
    static constexpr int kSignatureCarrier = -2;
    int m_openContentIndex = kNoBlock;
    bool m_openHadDelta = false;
    model::ToolArgumentsGate m_argumentsGate; // the open tool_use's: its input is an object
    int m_nextWireIndex = 0;                  // Anthropic's block index counts only blocks actually sent
};

} // namespace sw::formats
