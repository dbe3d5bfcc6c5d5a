#pragma once
// OpenAI Chat Completions (POST /v1/chat/completions) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::formats {

class OpenAIChatCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::OpenAICompletions; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder.
    static QString finishReason(model::StopReason reason);          // stop, length, tool_calls
    static QJsonObject usageJson(const model::Usage &usage);        // prompt/completion/total tokens
    static QJsonObject errorJson(const model::GatewayError &error); // {"error":{message,type,param,code}}
};

} // namespace sw::formats
