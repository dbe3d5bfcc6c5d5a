#include "core/formats/pi_native_codec.h"

#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/decode_prologue.h"
#include "core/formats/pi_native_stream_encoder.h"
#include "core/model/event_accumulator.h"
#include "core/wire/client_body.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/rapid_json.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

#include <algorithm>

namespace sw::formats {

using namespace sw::model;
namespace rj = sw::wire::rj;
using rj::Value;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// The OpenAI Responses message item id a text block came from, as pi-ai keeps it in the block's
// textSignature: {"v":1,"id":"msg_…"}, or the bare id in older versions. Google's text signatures
// (thought signatures) are neither.
QString responsesMessageId(const QString &textSignature) {
    if (textSignature.startsWith(QLatin1String("msg_")))
        return textSignature;
    if (!textSignature.startsWith(QLatin1Char('{')))
        return {};
    const QJsonObject o = QJsonDocument::fromJson(textSignature.toUtf8()).object();
    const QString id = o.value(L("id")).toString();
    return o.value(L("v")).toInt() == 1 && id.startsWith(QLatin1String("msg_")) ? id : QString();
}

// User and tool-result content: a string or [{type:text}|{type:image, data, mimeType}].
bool decodeUserContent(const Value *content, QList<ContentBlock> *out, const BodyPath &where, GatewayError *error) {
    if (rj::isString(content)) {
        out->append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    if (!rj::asArray(content))
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    qsizetype i = -1;
    for (const Value &block : content->GetArray()) {
        ++i;
        const Value *b = &block;
        const QString type = rj::toString(rj::member(b, "type"));
        if (type == L("text")) {
            out->append(ContentBlock::makeText(rj::toString(rj::member(b, "text"))));
        } else if (type == L("image")) {
            ContentBlock img;
            img.type = BlockType::Image;
            img.mimeType = wire::normalizedMediaType(rj::toString(rj::member(b, "mimeType")));
            img.data = rj::toLatin1(rj::member(b, "data"));
            img.mimeType = wire::sniffedImageType(img.mimeType, img.data);
            if (img.data.isEmpty())
                return rejectRequest(error, BodyPath(where, i) + L(".data: required base64 string"));
            out->append(img);
        } else {
            return rejectRequest(error, BodyPath(where, i) + L(".type: must be text or image"));
        }
    }
    return true;
}

bool decodeAssistant(const Value *m, Message *msg, const BodyPath &where, GatewayError *error) {
    msg->role = Role::Assistant;
    // pi records which API produced the turn: signatures stay valid only for that API.
    msg->api = rj::toString(rj::member(m, "api"));
    const Value *content = rj::member(m, "content");
    if (rj::isString(content)) {
        msg->content.append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    qsizetype i = -1;
    for (const Value &block : rj::elements(content)) {
        ++i;
        const Value *b = &block;
        const QString type = rj::toString(rj::member(b, "type"));
        ContentBlock out;
        if (type == L("text")) {
            out = ContentBlock::makeText(rj::toString(rj::member(b, "text")));
            const QString textSignature = rj::toString(rj::member(b, "textSignature"));
            out.itemId = responsesMessageId(textSignature);
            if (out.itemId.isEmpty())
                out.signature = textSignature; // Google's, raw, as pi-ai keeps it: back to the message's API only
        } else if (type == L("thinking")) {
            out.type = BlockType::Thinking;
            out.text = rj::toString(rj::member(b, "thinking"));
            // A redacted block: pi-ai's {redacted: true}, or, from pi's stream proxy (which keeps
            // no flag), the payload tagged as the gateway sent it (contentSignatureFor).
            // A signature tagged with its maker (contentSignatureFor: another API made it than the
            // one the proxy files it under) is that API's, whatever the message says.
            const TaggedSignature sig = untagSignature(rj::toString(rj::member(b, "thinkingSignature")));
            out.redacted = rj::toBool(rj::member(b, "redacted"), false) || sig.redacted;
            out.signature = sig.signature;
            out.signatureApi = sig.api;
            if (out.redacted)
                out.text.clear(); // pi-ai's "[Reasoning redacted]" is no reasoning of the model's
        } else if (type == L("toolCall")) {
            out.type = BlockType::ToolCall;
            out.toolCallId = rj::toString(rj::member(b, "id"));
            out.toolName = rj::toString(rj::member(b, "name"));
            if (out.toolName.isEmpty())
                return rejectRequest(error, BodyPath(BodyPath(where, "content"), i) + L(".name: required string"));
            out.arguments = rj::toQtObject(rj::member(b, "arguments"));
            out.argumentsJson = QString::fromUtf8(wire::compactJson(out.arguments));
            // Google's, raw when the message's API made it (kept only for that API), tagged when
            // another made it (writeBlock: Gemini's through Google's Chat endpoint).
            const TaggedSignature sig = untagSignature(rj::toString(rj::member(b, "thoughtSignature")));
            out.signature = sig.signature;
            out.signatureApi = sig.api;
        } else {
            return rejectRequest(error, BodyPath(BodyPath(where, "content"), i) +
                                            L(".type: must be text, thinking or toolCall"));
        }
        msg->content.append(out);
    }
    return true;
}

} // namespace

std::optional<model::ChatRequest> PiNativeCodec::decode(const QByteArray &body, GatewayError *error) const {
    auto begun = beginDecode(format(), body, error, /*requireModel=*/false); // pi names the model its own ways
    if (!begun)
        return std::nullopt;
    model::ChatRequest req = std::move(*begun);
    const Value *o = req.json->object();

    // modelId, or model as a string, or pi's whole Model object (as streamProxy sends it).
    const Value *model = rj::member(o, "model");
    req.model = rj::toString(rj::member(o, "modelId"));
    if (req.model.isEmpty())
        req.model = rj::asObject(model) ? rj::toString(rj::member(model, "id")) : rj::toString(model);
    if (req.model.isEmpty())
        return rejected(error, QStringLiteral("modelId: required string (or model as a string or a Model object)"));

    const Value *context = rj::asObject(rj::member(o, "context"));
    if (!context)
        return rejected(error, QStringLiteral("context: required object"));
    const Value *system = rj::member(context, "systemPrompt");
    if (rj::isString(system))
        req.context.systemPrompt = rj::toString(system);
    else if (!rj::isAbsent(system))
        return rejected(error, QStringLiteral("context.systemPrompt: must be a string"));
    const Value *messages = rj::member(context, "messages");
    if (!rj::asArray(messages))
        return rejected(error, QStringLiteral("context.messages: required array"));
    const BodyPath contextPath("context");
    const BodyPath messagesPath(contextPath, "messages");
    // pi's providers replay a context as pi-ai does (transformMessages), and so does the gateway in
    // their place: a turn that ended in an error or was aborted is left out (its tool calls may be
    // half made, its reasoning without its answer), and a tool call that got no result before the
    // next turn gets an error result, "No result provided": every API refuses an unanswered call.
    QList<std::pair<QString, QString>> unanswered; // id and name of the last kept turn's tool calls
    QList<Message> &out = req.context.messages;
    const auto answerTheRest = [&unanswered, &out]() {
        for (const auto &[id, name] : std::as_const(unanswered)) {
            Message result;
            result.role = Role::ToolResult;
            result.toolCallId = id;
            result.toolName = name;
            result.isError = true;
            result.content.append(ContentBlock::makeText(QStringLiteral("No result provided")));
            out.append(result);
        }
        unanswered.clear();
    };
    qsizetype i = -1;
    for (const Value &message : messages->GetArray()) {
        ++i;
        const BodyPath where(messagesPath, i);
        const Value *m = &message;
        const QString role = rj::toString(rj::member(m, "role"));
        Message msg;
        if (role == L("user")) {
            answerTheRest();
            msg.role = Role::User;
            if (!decodeUserContent(rj::member(m, "content"), &msg.content, BodyPath(where, "content"), error))
                return std::nullopt;
        } else if (role == L("assistant")) {
            answerTheRest();
            // Left out unread: a turn cut short may be malformed (a tool call without its name yet).
            const QString stopReason = rj::toString(rj::member(m, "stopReason"));
            if (stopReason == L("error") || stopReason == L("aborted"))
                continue;
            if (!decodeAssistant(m, &msg, where, error))
                return std::nullopt;
            for (const ContentBlock &b : std::as_const(msg.content))
                if (b.type == BlockType::ToolCall)
                    unanswered.append({b.toolCallId, b.toolName});
        } else if (role == L("toolResult")) {
            msg.role = Role::ToolResult;
            msg.toolCallId = rj::toString(rj::member(m, "toolCallId"));
            msg.toolName = rj::toString(rj::member(m, "toolName"));
            msg.isError = rj::toBool(rj::member(m, "isError"), false);
            if (msg.toolCallId.isEmpty())
                return rejected(error, where + L(".toolCallId: required string"));
            if (!decodeUserContent(rj::member(m, "content"), &msg.content, BodyPath(where, "content"), error))
                return std::nullopt;
            // The first call of its id: two calls of one answer under one id (DeepSeek, GLM, Kimi) are
            // answered one result each, in order, and one left unanswered still gets its result above.
            const auto answered = std::find_if(unanswered.begin(), unanswered.end(),
                                               [&msg](const auto &call) { return call.first == msg.toolCallId; });
            if (answered != unanswered.end())
                unanswered.erase(answered);
        } else {
            return rejected(error, where + L(".role: must be user, assistant or toolResult"));
        }
        out.append(msg);
    }
    answerTheRest();
    qsizetype toolIndex = -1;
    for (const Value &tool : rj::elements(rj::member(context, "tools"))) {
        ++toolIndex;
        const Value *t = &tool;
        QString nameProblem;
        std::optional<Tool> canonical = toolDefinition(t, "parameters", /*withStrict=*/false, &nameProblem);
        if (!canonical)
            return rejected(error, QStringLiteral("context.tools[%1].name: %2").arg(toolIndex).arg(nameProblem));
        req.context.tools.append(*canonical);
    }

    const Value *stream = rj::member(o, "stream");
    if (!rj::isAbsent(stream) && !stream->IsBool())
        return rejected(error, QStringLiteral("stream: must be a boolean"));
    req.stream = rj::toBool(stream, true); // pi native streams unless told otherwise

    const Value *options = rj::asObject(rj::member(o, "options"));
    Options &opt = req.options;
    for (const char *key : {"maxTokens", "temperature", "topP", "presencePenalty"}) {
        const Value *v = rj::member(options, key);
        if (!rj::isAbsent(v) && !v->IsNumber())
            return rejected(error, QStringLiteral("options.") + QString::fromLatin1(key) + L(": must be a number"));
    }
    if (const Value *v = rj::member(options, "maxTokens"); rj::isNumber(v))
        opt.maxTokens = int(qBound(0.0, rj::toDouble(v), 2147483647.0));
    if (const Value *v = rj::member(options, "temperature"); rj::isNumber(v))
        opt.temperature = rj::toDouble(v);
    // streamProxy's sampling options, as every other format's top_p / presence_penalty go (the
    // adapters carry them where the API has them). Its repetitionPenalty has no field in any of
    // the four APIs: the dropped report names it (wire::droppedMembers), as any unread option.
    if (const Value *v = rj::member(options, "topP"); rj::isNumber(v))
        opt.topP = rj::toDouble(v);
    if (const Value *v = rj::member(options, "presencePenalty"); rj::isNumber(v))
        opt.presencePenalty = rj::toDouble(v);
    opt.reasoning = rj::toString(rj::member(options, "reasoning"));
    if (opt.reasoning == L("off"))
        opt.reasoning.clear();
    if (!opt.reasoning.isEmpty()) {
        const QByteArray level = rj::toWtf8(opt.reasoning);
        const Value *budget = rj::member(rj::member(options, "thinkingBudgets"),
                                         std::string_view(level.constData(), size_t(level.size())));
        if (rj::isNumber(budget))
            opt.thinkingBudget = rj::toInt(budget);
    }
    const Value *choice = rj::member(options, "toolChoice");
    if (rj::isString(choice))
        opt.toolChoice = rj::equals(choice, "any") ? QStringLiteral("required") : rj::toString(choice);
    else if (rj::asObject(choice))
        opt.toolChoice =
            rj::toString(rj::member(choice, "name"), rj::toString(rj::member(rj::member(choice, "function"), "name")));
    return req;
}

std::unique_ptr<StreamEncoder> PiNativeCodec::makeStreamEncoder(const EncodeInfo &info) const {
    return std::make_unique<PiNativeStreamEncoder>(info);
}

void PiNativeCodec::writeUsage(wire::JsonWriter &w, const Usage &usage, const EncodeInfo &info) {
    // Priced as the usage ledger prices the same row (models.*.cost): pi shows it as the turn's cost.
    // A model without prices costs 0.
    const double input = double(usage.input) * info.costInput / 1e6;
    const double output = double(usage.output) * info.costOutput / 1e6;
    const double cacheRead = double(usage.cacheRead) * info.costCacheRead / 1e6;
    const double cacheWrite = double(usage.cacheWrite) * info.costCacheWrite / 1e6;
    w.beginObject()
        .field("input", usage.input)
        .field("output", usage.output)
        .field("cacheRead", usage.cacheRead)
        .field("cacheWrite", usage.cacheWrite)
        .field("totalTokens", usage.totalTokens())
        .key("cost")
        .beginObject()
        .field("input", input)
        .field("output", output)
        .field("cacheRead", cacheRead)
        .field("cacheWrite", cacheWrite)
        .field("total", input + output + cacheRead + cacheWrite)
        .endObject()
        .endObject();
}

QString PiNativeCodec::textSignatureFor(const model::ContentBlock &text) {
    if (!text.itemId.startsWith(QLatin1String("msg_")))
        return text.signature; // Google's thoughtSignature on a text part, raw, as pi-ai keeps it (probe N1 2)
    return QString::fromUtf8(
        QJsonDocument(QJsonObject{{L("v"), 1}, {L("id"), text.itemId}}).toJson(QJsonDocument::Compact));
}

QString PiNativeCodec::toolCallIdFor(const model::ContentBlock &call) {
    if (call.itemId.startsWith(QLatin1String("fc_")) && !call.toolCallId.contains(QLatin1Char('|')))
        return call.toolCallId + QLatin1Char('|') + call.itemId;
    return call.toolCallId;
}

QString PiNativeCodec::contentSignatureFor(const model::ContentBlock &thinking, const QString &api,
                                           const QString &clientApi) {
    const QString &maker = thinking.signatureApi.isEmpty() ? api : thinking.signatureApi;
    if (thinking.redacted)
        return tagSignature(maker, thinking.signature, /*redacted=*/true);
    if (thinking.signature.isEmpty() || clientApi.isEmpty() || clientApi == maker)
        return thinking.signature;
    return tagSignature(maker, thinking.signature);
}

QString PiNativeCodec::proxyModelApi(const model::ChatRequest &request) {
    const rj::Value *model = rj::asObject(rj::member(wire::clientBody(request), "model"));
    return model ? rj::toString(rj::member(model, "api")) : QString();
}

QString PiNativeCodec::refusalMessage(const AssistantMessage &message) {
    QString refusal;
    for (const ContentBlock &b : message.content)
        if (b.type == BlockType::Text && b.refusal)
            refusal += b.text;
    if (!refusal.trimmed().isEmpty())
        return refusal;
    return message.errorMessage.isEmpty() ? QStringLiteral("The provider refused to answer") : message.errorMessage;
}

void PiNativeCodec::writeBlock(wire::JsonWriter &w, const ContentBlock &b, const QString &api) {
    w.beginObject();
    switch (b.type) {
    case BlockType::Text:
        w.field("type", "text").field("text", b.text);
        if (const QString signature = textSignatureFor(b); !signature.isEmpty())
            w.field("textSignature", signature);
        break;
    case BlockType::Thinking:
        w.field("type", "thinking").field("thinking", b.text);
        if (!b.signature.isEmpty())
            w.field("thinkingSignature", b.signature);
        if (b.redacted)
            w.field("redacted", true);
        break;
    case BlockType::ToolCall:
        w.field("type", "toolCall").field("id", toolCallIdFor(b)).field("name", b.toolName);
        if (b.arguments.isEmpty()) // a call cut by max_tokens: what arrived, as pi-ai reads it
            w.field("arguments", parseStreamedToolArguments(b.argumentsJson));
        else
            w.field("arguments", b.arguments);
        if (!b.signature.isEmpty())
            w.field("thoughtSignature", b.signatureApi.isEmpty() || b.signatureApi == api
                                            ? b.signature
                                            : tagSignature(b.signatureApi, b.signature));
        break;
    case BlockType::Image:
    case BlockType::Document:
        break;
    }
    w.endObject();
}

void PiNativeCodec::writeMessage(wire::JsonWriter &w, const AssistantMessage &message, const EncodeInfo &info) {
    w.beginObject().field("role", "assistant").key("content").beginArray();
    const QString &api = message.api.isEmpty() ? info.upstreamApi : message.api;
    for (const ContentBlock &b : message.content)
        if (b.type != BlockType::Image && b.type != BlockType::Document)
            writeBlock(w, b, api);
    w.endArray()
        .field("api", api)
        .field("provider", message.provider.isEmpty() ? info.upstreamProvider : message.provider)
        .field("model", info.model)
        .field("responseId", info.responseId)
        .key("usage");
    writeUsage(w, message.usage, info);
    w.field("stopReason", stopReasonName(message.stopReason));
    if (message.stopReason == StopReason::Refusal)
        w.field("errorMessage", refusalMessage(message));
    else if (!message.errorMessage.isEmpty())
        w.field("errorMessage", message.errorMessage);
    w.field("timestamp", info.createdSecs * 1000).endObject();
}

void PiNativeCodec::writeError(wire::JsonWriter &w, const GatewayError &error) {
    w.beginObject()
        .key("error")
        .beginObject()
        .field("type", AnthropicMessagesCodec::errorType(error.category))
        .field("message", error.message);
    if (!error.code.isEmpty())
        w.field("code", error.code); // the upstream's own code (context_length_exceeded, ...)
    w.endObject().endObject();
}

QByteArray PiNativeCodec::encodeResponse(const AssistantMessage &message, const EncodeInfo &info) const {
    wire::JsonWriter w(512);
    w.beginObject().key("message");
    writeMessage(w, message, info);
    w.endObject();
    return w.take();
}

QByteArray PiNativeCodec::encodeError(const GatewayError &error) const {
    wire::JsonWriter w(96 + error.message.size());
    writeError(w, error);
    return w.take();
}

} // namespace sw::formats
