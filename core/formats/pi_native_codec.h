#pragma once
// pi native (POST /v1/pi/stream): pi-ai's Context in, AssistantMessageEvent JSON out.

#include "core/formats/inbound_codec.h"

namespace sw::formats {

class PiNativeCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::Pi; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder.
    static QJsonObject usageJson(const model::Usage &usage); // input, output, cacheRead, cacheWrite, totalTokens, cost
    static QJsonObject blockJson(const model::ContentBlock &b); // text / thinking / toolCall ({} for images)
    static QJsonObject messageJson(const model::AssistantMessage &message, const EncodeInfo &info);
    static QJsonObject errorJson(const model::GatewayError &error); // {"error":{type,message}}
};

} // namespace sw::formats
