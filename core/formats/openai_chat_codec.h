#pragma once
// OpenAI Chat Completions (POST /v1/chat/completions) as an inbound format.

#include "core/formats/inbound_codec.h"

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class OpenAIChatCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::OpenAICompletions; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder.
    static QLatin1String finishReason(model::StopReason reason); // stop, length, tool_calls
    // The usage object: prompt/completion/total tokens, prompt_tokens_details.cached_tokens.
    static void writeUsage(wire::JsonWriter &w, const model::Usage &usage);
    // A tool call's "extra_content":{"google":{"thought_signature":…}}, as Google's own Chat endpoint
    // writes it, when Google signed the call (model::functionCallCarrier); the raw signature, which
    // the client sends back with the call. Nothing for a call another API made or signed.
    static void writeCallSignature(wire::JsonWriter &w, const model::ContentBlock &call, const QString &upstreamApi);
    // What an error says in OpenAI's vocabulary (shared with the Responses format).
    struct ErrorFields {
        QString type;
        QString code;
        QString param; // null when empty
    };
    static ErrorFields errorFields(const model::GatewayError &error);
    // {"error":{message,type,param,code}}; `inBand`, in a stream whose head is out: with
    // "should_retry": false when the failure is final (wire::kShouldRetryMember), which the
    // x-should-retry header says of an error body.
    static void writeError(wire::JsonWriter &w, const model::GatewayError &error, bool inBand = false);
};

} // namespace sw::formats
