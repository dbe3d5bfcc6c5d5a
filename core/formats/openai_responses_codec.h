#pragma once
// OpenAI Responses (POST /v1/responses) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::formats {

class OpenAIResponsesCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::OpenAIResponses; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder and the upstream adapter.
    static QJsonObject usageJson(const model::Usage &usage); // input_tokens (incl. cached), output_tokens, ...
    // The response object: status completed / incomplete / failed / in_progress.
    // `incompleteReason` (max_output_tokens, content_filter) fills incomplete_details.
    static QJsonObject responseJson(const EncodeInfo &info, const QString &status, const QJsonArray &output,
                                    const model::Usage *usage, const model::GatewayError *error = nullptr,
                                    const QString &incompleteReason = {});
    // A finished answer's status and incomplete reason: length -> incomplete/max_output_tokens,
    // refusal -> incomplete/content_filter (how the Responses API reports a filtered answer).
    static std::pair<QString, QString> statusFor(model::StopReason reason);
    // The text of a custom tool's call: arguments["input"] as the function-shaped tool
    // received it (model::customToolParameters), else the only string argument, else the
    // raw argument text.
    static QString customInput(const model::ContentBlock &call);
    static QString errorCode(const model::GatewayError &error); // server_error, rate_limit_exceeded, ...
};

} // namespace sw::formats
