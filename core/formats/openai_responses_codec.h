#pragma once
// OpenAI Responses (POST /v1/responses) as an inbound format.

#include "formats/inbound_codec.h"

namespace sw::formats {

class OpenAIResponsesCodec final : public InboundCodec {
public:
    InboundFormat format() const override { return InboundFormat::OpenAIResponses; }
    std::optional<ParsedRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
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
    // A reasoning item as it goes back to the Responses API. A thinking block whose
    // signature is a whole reasoning item (decoded from this API) keeps its id and
    // encrypted_content; any other signature is dropped (formats/translation_rules.md).
    // In an answer (`upstreamApi` = the API that made it), another API's signature goes
    // in encrypted_content, tagged with its maker (model::tagSignature).
    static QJsonObject reasoningItem(const model::ContentBlock &thinking, const QString &fallbackId,
                                     const QString &upstreamApi = {});
    // The text of a custom tool's call: arguments["input"] as the function-shaped tool
    // received it (model::customToolParameters), else the only string argument, else the
    // raw argument text.
    static QString customInput(const model::ContentBlock &call);
    static QString errorCode(const model::GatewayError &error); // server_error, rate_limit_exceeded, ...
};

} // namespace sw::formats
