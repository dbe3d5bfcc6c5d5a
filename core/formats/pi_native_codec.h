#pragma once
// pi native (POST /v1/pi/stream): pi-ai's Context in, AssistantMessageEvent JSON out.

#include "core/formats/inbound_codec.h"

namespace sw::wire {
class JsonWriter;
}

namespace sw::formats {

class PiNativeCodec final : public InboundCodec {
public:
    wire::Api format() const override { return wire::Api::Pi; }
    std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const override;
    std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const override;
    QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const override;
    QByteArray encodeError(const model::GatewayError &error) const override;

    // Wire vocabulary, shared with the stream encoder.
    // input, output, cacheRead, cacheWrite, totalTokens, cost
    static void writeUsage(wire::JsonWriter &w, const model::Usage &usage, const EncodeInfo &info);
    // A tool call's id as pi-ai keeps it: an OpenAI Responses call is "call_id|item_id", so that the
    // item id (fc_…) goes back beside its reasoning item on the next turn.
    static QString toolCallIdFor(const model::ContentBlock &call);
    // A text's signature as pi-ai keeps it: a Responses message item's {"v":1,"id":"msg_…"}, else the
    // block's own (Google's thoughtSignature on a text part, raw); "" when it has neither.
    static QString textSignatureFor(const model::ContentBlock &text);
    // A thinking block's signature as pi's stream proxy reads it from thinking_end's
    // contentSignature: raw, but a redacted block's payload tagged swsig1.<api>.redacted.<data>
    // (model::tagSignature), since the proxy keeps no `redacted` flag; decode() reads it back as
    // redacted. `api` made the block when it does not say (the message's api).
    // A signature another API made than the one the client files it under (`clientApi`, pi's stream
    // proxy's Model api) goes tagged with its maker too: raw, it would go back to the client's API
    // as its own, and be refused there (probe X3 F3).
    static QString contentSignatureFor(const model::ContentBlock &thinking, const QString &api,
                                       const QString &clientApi = {});
    // The api of the Model object pi's stream proxy sends as `model` (it files the answer under it);
    // "" when the request names its model otherwise.
    static QString proxyModelApi(const model::ChatRequest &request);
    // A refusal's errorMessage (pi has no refusal stop reason: it is an error there, as pi-ai
    // makes one): the model's own refusal text when it gave one, else the provider's reason.
    static QString refusalMessage(const model::AssistantMessage &message);
    // text / thinking / toolCall ({} for images); `api` made the message. A call another API signed
    // (Google's Chat endpoint, `openai-completions`, passes on Gemini's) carries its signature tagged
    // with that API (model::tagSignature), which decode() reads back as that API's: raw, it would be
    // read as the message's.
    static void writeBlock(wire::JsonWriter &w, const model::ContentBlock &b, const QString &api);
    static void writeMessage(wire::JsonWriter &w, const model::AssistantMessage &message, const EncodeInfo &info);
    static void writeError(wire::JsonWriter &w, const model::GatewayError &error); // {"error":{type,message}}
};

} // namespace sw::formats
