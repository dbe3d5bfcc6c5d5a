#pragma once
// Anthropic Messages (POST /v1/messages) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class AnthropicMessagesCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::AnthropicMessages; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder and the upstream adapter.
    static QLatin1String stopReasonName(model::StopReason reason); // end_turn, max_tokens, tool_use
    static QString errorType(model::ErrorCategory category);       // invalid_request_error, ...
    // {"type":"error","error":{…}}; `inBand`: as OpenAIChatCodec::writeError's.
    static void writeError(wire::JsonWriter &w, const model::GatewayError &error, bool inBand = false);
    static void writeUsage(wire::JsonWriter &w, const model::Usage &usage);
    // "stop_reason" and "stop_sequence": "stop_sequence" and the sequence when the answer ended at
    // one of the client's stop sequences, else the reason's name and null.
    static void writeStop(wire::JsonWriter &w, model::StopReason reason, const QString &stopSequence);
    // The signature an answer's thinking block carries: the provider's own when
    // Anthropic made it, else tagged with its maker (model::tagSignature), so the
    // next request never hands Anthropic a signature it did not sign.
    static QString signatureFor(const model::ContentBlock &thinking, const QString &upstreamApi);
    // A call's id as an Anthropic client is given it: valid for Messages and in none of `taken`
    // (the conversation's ids and the answer's earlier calls), which then holds it. `nextSuffix` is
    // the answer's one for `taken` (wire::uniqueToolId): ids another API made that become one in
    // Messages' characters ("c" and a CJK character: "c_") are renamed in linear time.
    static QString clientToolId(const QString &id, QSet<QString> &taken, QHash<QString, int> &nextSuffix);
};

} // namespace sw::formats
