#pragma once
// An inbound codec turns a client's request body in one wire format into the
// canonical request, and canonical events / messages / errors back into that
// format's bytes. One implementation per route format.

#include "core/model/chat.h"
#include "core/model/chat_request.h"
#include "core/model/gateway_error.h"

#include <QByteArray>
#include <QJsonObject>
#include <memory>

namespace sw::formats {

// A client route speaks one API (wire::Api, never Google): its name as telemetry reports it.
QString formatName(wire::Api api); // "openai-chat", "anthropic-messages", "openai-responses", "pi"

// Facts an encoder puts into its output.
struct EncodeInfo {
    QString responseId;         // e.g. "chatcmpl-…", "msg_…", "resp_…"
    QString model;              // the model name the client asked for
    qint64 createdSecs = 0;     // unix seconds
    bool includeUsage = false;  // OpenAI chat: send the final usage chunk
    bool hideReasoning = false; // OpenAI chat: no reasoning_content (ChatRequest::hideReasoning)
    QString upstreamApi;        // the API that produced the answer (pi: AssistantMessage.api), when known
    QString upstreamProvider;   // the provider id that produced it (pi: AssistantMessage.provider)
    // pi's stream proxy: the api of the Model object it sent, under which it files the answer it
    // rebuilds from the events, signatures included (PiNativeCodec::proxyModelApi); "" otherwise.
    QString clientApi;
    QStringList customTools; // ChatRequest::customToolNames(): calls of these are custom_tool_call items
    // Anthropic clients: the tool_use ids the request's history holds (ChatRequest::historyToolIds()).
    // A call of the answer with one of them gets a fresh one (wire::uniqueToolId): Messages never
    // repeats an id within a conversation, and Claude Code loops on a repeat.
    QSet<QString> takenToolIds;
    // The answering model's prices per million tokens (models.*.cost), for a format whose usage
    // carries cost (pi), as the usage ledger prices them.
    double costInput = 0;
    double costOutput = 0;
    double costCacheRead = 0;
    double costCacheWrite = 0;
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
    // A same-API (passthrough) stream's upstream frames, as the client got them: a format that
    // numbers its events or names its response in them (Responses) follows them, so that an
    // error written after a cut continues that stream rather than starting another one.
    virtual void followPassthrough(QByteArrayView frame) { Q_UNUSED(frame); }
    // The frame that ends a followed passthrough stream whose upstream answered whole but closed
    // without it (Chat's [DONE], Messages' message_stop: a body cut after the stop reason came),
    // or nothing when it came or the format has none to add.
    virtual QByteArray endPassthrough() { return {}; }
};

class InboundCodec {
public:
    virtual ~InboundCodec() = default;
    virtual wire::Api format() const = 0;
    // Parses a request body. On failure returns nullopt and sets *error
    // (status 400, category InvalidRequest, a message naming the bad field).
    virtual std::optional<model::ChatRequest> decode(const QByteArray &body, model::GatewayError *error) const = 0;
    virtual std::unique_ptr<StreamEncoder> makeStreamEncoder(const EncodeInfo &info) const = 0;
    // Non-streaming answer body (JSON).
    virtual QByteArray encodeResponse(const model::AssistantMessage &message, const EncodeInfo &info) const = 0;
    // Error body (JSON) in this format's shape; the HTTP status is error.status.
    virtual QByteArray encodeError(const model::GatewayError &error) const = 0;
};

// Registry: one shared, stateless codec per client route API (not Google: no route).
const InboundCodec &codecFor(wire::Api api);

} // namespace sw::formats
