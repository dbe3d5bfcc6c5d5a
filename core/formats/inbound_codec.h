#pragma once
// An inbound codec turns a client's request body in one wire format into the
// canonical request, and canonical events / messages / errors back into that
// format's bytes. One implementation per route format.

#include "model/chat.h"
#include "model/gateway_error.h"

#include <QByteArray>
#include <QJsonObject>
#include <memory>

namespace sw::formats {

enum class InboundFormat { OpenAIChat, AnthropicMessages, OpenAIResponses, PiNative };

// The upstream API name a format is the same API as ("" for pi native).
QString sameApiName(InboundFormat f);
QString formatName(InboundFormat f); // "openai-chat", "anthropic-messages", "openai-responses", "pi"

struct ParsedRequest {
    QString model;             // as the client sent it
    bool stream = false;
    bool includeUsage = false; // OpenAI chat stream_options.include_usage
    model::Context context;
    model::Options options;
    QJsonObject raw;           // the body as sent, for same-API passthrough

    // Names of the client's free-form (`custom`) tools: their calls go back to the client
    // as custom calls whatever API answered (EncodeInfo::customTools).
    QStringList customToolNames() const;
};

// Facts an encoder puts into its output.
struct EncodeInfo {
    QString responseId;        // e.g. "chatcmpl-…", "msg_…", "resp_…"
    QString model;             // the model name the client asked for
    qint64 createdSecs = 0;    // unix seconds
    bool includeUsage = false; // OpenAI chat: send the final usage chunk
    QString upstreamApi;       // the API that produced the answer (pi: AssistantMessage.api), when known
    QString upstreamProvider;  // the provider id that produced it (pi: AssistantMessage.provider)
    QStringList customTools;   // ParsedRequest::customToolNames(): calls of these are custom_tool_call items
};

// Stateful: one per streamed response. Returns raw SSE bytes (complete frames).
class StreamEncoder {
public:
    virtual ~StreamEncoder() = default;
    virtual QByteArray encode(const model::StreamEvent &event) = 0;
    // An error after headers were sent, as this format's in-band error. Never
    // followed by a success terminator ([DONE] / message_stop) unless the
    // format itself ends every stream that way (pi: [DONE] ends every stream).
    virtual QByteArray encodeError(const model::GatewayError &error) = 0;
};

class InboundCodec {
public:
    virtual ~InboundCodec() = default;
    virtual InboundFormat format() const = 0;
    // Parses a request body. On failure returns nullopt and sets *error
    // (status 400, category InvalidRequest, a message naming the bad field).
    virtual std::optional<ParsedRequest> decode(const QByteArray &body, model::GatewayError *error) const = 0;
    virtual std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const = 0;
    // Non-streaming answer body (JSON).
    virtual QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const = 0;
    // Error body (JSON) in this format's shape; the HTTP status is error.status.
    virtual QByteArray encodeError(const model::GatewayError &error) const = 0;
};

// Registry: one shared, stateless codec per format.
const InboundCodec &codecFor(InboundFormat f);

} // namespace sw::formats
