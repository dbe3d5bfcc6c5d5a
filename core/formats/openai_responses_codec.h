#pragma once
// OpenAI Responses (POST /v1/responses) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class OpenAIResponsesCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::OpenAIResponses; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder and the upstream adapter.
    // input_tokens (incl. cached), output_tokens, ...
    static void writeUsage(wire::JsonWriter &w, const model::Usage &usage);
    // The response object, in two halves around its output items (which the caller writes,
    // comma-separated): beginResponse writes up to the "output" array's opening bracket,
    // endResponse the rest. Status completed / incomplete / failed / in_progress;
    // `incompleteReason` (max_output_tokens, content_filter) fills incomplete_details.
    // `outputText` (the SDKs' convenience field, also sent by some servers) when given.
    static void beginResponse(wire::JsonWriter &w, const EncodeInfo &info, QLatin1String status,
                              const model::GatewayError *error = nullptr, QLatin1String incompleteReason = {});
    static void endResponse(wire::JsonWriter &w, const model::Usage *usage, const QString *outputText = nullptr);
    // A finished answer's status and incomplete reason: length -> incomplete/max_output_tokens,
    // refusal -> incomplete/content_filter (how the Responses API reports a filtered answer).
    static std::pair<QLatin1String, QLatin1String> statusFor(model::StopReason reason);
    // The status of the answer's last item (a message or a call): `incomplete` when the token cap
    // cut the answer (its text or the call's arguments are cut), else `completed`.
    static QLatin1String lastItemStatusFor(model::StopReason reason);
    // The text of a custom tool's call: arguments["input"] as the function-shaped tool
    // received it (model::customToolParameters), else the only string argument, else the
    // raw argument text.
    static QString customInput(const model::ContentBlock &call);
    // The reasoning item, empty, that carries a Google call's signature just before its call
    // (model::functionCallCarrier): Codex keeps it and sends it back with the call.
    static void writeCallSignatureCarrier(wire::JsonWriter &w, const QString &id, const QString &carrier);
    static QString errorCode(const model::GatewayError &error); // server_error, rate_limit_exceeded, ...
};

} // namespace sw::formats
