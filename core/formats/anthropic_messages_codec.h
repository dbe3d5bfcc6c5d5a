#pragma once
// Anthropic Messages (POST /v1/messages) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::formats {

class AnthropicMessagesCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::AnthropicMessages; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder and the upstream adapter.
    static QString stopReasonName(model::StopReason reason);        // end_turn, max_tokens, tool_use
    static QString errorType(model::ErrorCategory category);        // invalid_request_error, ...
    static QJsonObject errorJson(const model::GatewayError &error); // {"type":"error","error":{type,message}}
    static QJsonObject usageJson(const model::Usage &usage);
    // The signature an answer's thinking block carries: the provider's own when
    // Anthropic made it, else tagged with its maker (model::tagSignature), so the
    // next request never hands Anthropic a signature it did not sign.
    static QString signatureFor(const model::ContentBlock &thinking, const QString &upstreamApi);
    // A Google function call's thoughtSignature rides in an empty thinking block just
    // before its tool_use (tool_use has no field for it); nullopt when there is none.
    static std::optional<QJsonObject> functionCallSignatureBlock(const model::ContentBlock &call,
                                                                 const QString &upstreamApi);
};

} // namespace sw::formats
