#include "core/formats/pi_native_codec.h"

#include "core/formats/anthropic_messages_codec.h"
#include "core/formats/decode_prologue.h"
#include "core/formats/pi_native_stream_encoder.h"
#include "core/model/event_accumulator.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

namespace sw::formats {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// User and tool-result content: a string or [{type:text}|{type:image, data, mimeType}].
bool decodeUserContent(const QJsonValue &content, QList<ContentBlock> *out, const QString &where, GatewayError *error) {
    if (content.isString()) {
        out->append(ContentBlock::makeText(content.toString()));
        return true;
    }
    if (!content.isArray())
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    const QJsonArray blocks = content.toArray();
    for (qsizetype i = 0; i < blocks.size(); ++i) {
        const QJsonObject b = blocks.at(i).toObject();
        const QString type = b.value(L("type")).toString();
        if (type == L("text")) {
            out->append(ContentBlock::makeText(b.value(L("text")).toString()));
        } else if (type == L("image")) {
            ContentBlock img;
            img.type = BlockType::Image;
            img.mimeType = b.value(L("mimeType")).toString();
            img.data = b.value(L("data")).toString().toLatin1();
            if (img.data.isEmpty())
                return rejectRequest(error, QStringLiteral("%1[%2].data: required base64 string").arg(where).arg(i));
            out->append(img);
        } else {
            return rejectRequest(error, QStringLiteral("%1[%2].type: must be text or image").arg(where).arg(i));
        }
    }
    return true;
}

bool decodeAssistant(const QJsonObject &m, Message *msg, const QString &where, GatewayError *error) {
    msg->role = Role::Assistant;
    // pi records which API produced the turn: signatures stay valid only for that API.
    msg->api = m.value(L("api")).toString();
    const QJsonValue content = m.value(L("content"));
    if (content.isString()) {
        msg->content.append(ContentBlock::makeText(content.toString()));
        return true;
    }
    const QJsonArray blocks = content.toArray();
    for (qsizetype i = 0; i < blocks.size(); ++i) {
        const QJsonObject b = blocks.at(i).toObject();
        const QString type = b.value(L("type")).toString();
        ContentBlock out;
        if (type == L("text")) {
            out = ContentBlock::makeText(b.value(L("text")).toString());
        } else if (type == L("thinking")) {
            out.type = BlockType::Thinking;
            out.text = b.value(L("thinking")).toString();
            out.signature = b.value(L("thinkingSignature")).toString();
            out.redacted = b.value(L("redacted")).toBool(false);
        } else if (type == L("toolCall")) {
            out.type = BlockType::ToolCall;
            out.toolCallId = b.value(L("id")).toString();
            out.toolName = b.value(L("name")).toString();
            if (out.toolName.isEmpty())
                return rejectRequest(error, QStringLiteral("%1.content[%2].name: required string").arg(where).arg(i));
            out.arguments = b.value(L("arguments")).toObject();
            out.argumentsJson = QString::fromUtf8(wire::compactJson(out.arguments));
            out.signature = b.value(L("thoughtSignature")).toString(); // Google: kept only for the same API
        } else {
            return rejectRequest(
                error, QStringLiteral("%1.content[%2].type: must be text, thinking or toolCall").arg(where).arg(i));
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
    const QJsonObject &o = req.raw;

    // modelId, or model as a string, or pi's whole Model object (as streamProxy sends it).
    const QJsonValue model = o.value(L("model"));
    req.model = o.value(L("modelId")).toString();
    if (req.model.isEmpty())
        req.model = model.isObject() ? model.toObject().value(L("id")).toString() : model.toString();
    if (req.model.isEmpty())
        return rejected(error, QStringLiteral("modelId: required string (or model as a string or a Model object)"));

    const QJsonValue contextValue = o.value(L("context"));
    if (!contextValue.isObject())
        return rejected(error, QStringLiteral("context: required object"));
    const QJsonObject context = contextValue.toObject();
    const QJsonValue system = context.value(L("systemPrompt"));
    if (system.isString())
        req.context.systemPrompt = system.toString();
    else if (!system.isUndefined() && !system.isNull())
        return rejected(error, QStringLiteral("context.systemPrompt: must be a string"));
    const QJsonValue messages = context.value(L("messages"));
    if (!messages.isArray())
        return rejected(error, QStringLiteral("context.messages: required array"));
    const QJsonArray list = messages.toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QString where = QStringLiteral("context.messages[%1]").arg(i);
        const QJsonObject m = list.at(i).toObject();
        const QString role = m.value(L("role")).toString();
        Message msg;
        if (role == L("user")) {
            msg.role = Role::User;
            if (!decodeUserContent(m.value(L("content")), &msg.content, where + L(".content"), error))
                return std::nullopt;
        } else if (role == L("assistant")) {
            if (!decodeAssistant(m, &msg, where, error))
                return std::nullopt;
        } else if (role == L("toolResult")) {
            msg.role = Role::ToolResult;
            msg.toolCallId = m.value(L("toolCallId")).toString();
            msg.toolName = m.value(L("toolName")).toString();
            msg.isError = m.value(L("isError")).toBool(false);
            if (msg.toolCallId.isEmpty())
                return rejected(error, where + L(".toolCallId: required string"));
            if (!decodeUserContent(m.value(L("content")), &msg.content, where + L(".content"), error))
                return std::nullopt;
        } else {
            return rejected(error, where + L(".role: must be user, assistant or toolResult"));
        }
        req.context.messages.append(msg);
    }
    const QJsonArray tools = context.value(L("tools")).toArray();
    for (qsizetype i = 0; i < tools.size(); ++i) {
        const QJsonObject t = tools.at(i).toObject();
        Tool tool;
        tool.name = t.value(L("name")).toString();
        if (tool.name.isEmpty())
            return rejected(error, QStringLiteral("context.tools[%1].name: required string").arg(i));
        tool.description = t.value(L("description")).toString();
        tool.parameters = t.value(L("parameters")).toObject();
        req.context.tools.append(tool);
    }

    const QJsonValue stream = o.value(L("stream"));
    if (!stream.isUndefined() && !stream.isNull() && !stream.isBool())
        return rejected(error, QStringLiteral("stream: must be a boolean"));
    req.stream = stream.toBool(true); // pi native streams unless told otherwise

    const QJsonObject options = o.value(L("options")).toObject();
    Options &opt = req.options;
    for (const char *key : {"maxTokens", "temperature"}) {
        const QJsonValue v = options.value(L(key));
        if (!v.isUndefined() && !v.isNull() && !v.isDouble())
            return rejected(error, QStringLiteral("options.") + QString::fromLatin1(key) + L(": must be a number"));
    }
    if (options.value(L("maxTokens")).isDouble())
        opt.maxTokens = int(qBound(0.0, options.value(L("maxTokens")).toDouble(), 2147483647.0));
    if (options.value(L("temperature")).isDouble())
        opt.temperature = options.value(L("temperature")).toDouble();
    opt.reasoning = options.value(L("reasoning")).toString();
    if (opt.reasoning == L("off"))
        opt.reasoning.clear();
    const QJsonValue budgets = options.value(L("thinkingBudgets"));
    if (!opt.reasoning.isEmpty() && budgets.toObject().value(opt.reasoning).isDouble())
        opt.thinkingBudget = budgets.toObject().value(opt.reasoning).toInt();
    const QJsonValue choice = options.value(L("toolChoice"));
    if (choice.isString())
        opt.toolChoice = choice.toString() == L("any") ? QStringLiteral("required") : choice.toString();
    else if (choice.isObject()) {
        const QJsonObject c = choice.toObject();
        opt.toolChoice = c.value(L("name")).toString(c.value(L("function")).toObject().value(L("name")).toString());
    }
    return req;
}

std::unique_ptr<StreamEncoder> PiNativeCodec::makeStreamEncoder(const EncodeInfo &info) const {
    return std::make_unique<PiNativeStreamEncoder>(info);
}

void PiNativeCodec::writeUsage(wire::JsonWriter &w, const Usage &usage) {
    // The gateway does not price per client; cost is left at zero for the client to compute.
    w.beginObject()
        .field("input", usage.input)
        .field("output", usage.output)
        .field("cacheRead", usage.cacheRead)
        .field("cacheWrite", usage.cacheWrite)
        .field("totalTokens", usage.totalTokens())
        .key("cost")
        .beginObject()
        .field("input", 0)
        .field("output", 0)
        .field("cacheRead", 0)
        .field("cacheWrite", 0)
        .field("total", 0)
        .endObject()
        .endObject();
}

void PiNativeCodec::writeBlock(wire::JsonWriter &w, const ContentBlock &b) {
    w.beginObject();
    switch (b.type) {
    case BlockType::Text:
        w.field("type", "text").field("text", b.text);
        break;
    case BlockType::Thinking:
        w.field("type", "thinking").field("thinking", b.text);
        if (!b.signature.isEmpty())
            w.field("thinkingSignature", b.signature);
        if (b.redacted)
            w.field("redacted", true);
        break;
    case BlockType::ToolCall:
        w.field("type", "toolCall").field("id", b.toolCallId).field("name", b.toolName);
        if (b.arguments.isEmpty())
            w.field("arguments", parseToolArguments(b.argumentsJson));
        else
            w.field("arguments", b.arguments);
        if (!b.signature.isEmpty())
            w.field("thoughtSignature", b.signature);
        break;
    case BlockType::Image:
        break;
    }
    w.endObject();
}

void PiNativeCodec::writeMessage(wire::JsonWriter &w, const AssistantMessage &message, const EncodeInfo &info) {
    w.beginObject().field("role", "assistant").key("content").beginArray();
    for (const ContentBlock &b : message.content)
        if (b.type != BlockType::Image)
            writeBlock(w, b);
    w.endArray()
        .field("api", message.api.isEmpty() ? info.upstreamApi : message.api)
        .field("provider", message.provider.isEmpty() ? info.upstreamProvider : message.provider)
        .field("model", info.model)
        .field("responseId", info.responseId)
        .key("usage");
    writeUsage(w, message.usage);
    w.field("stopReason", stopReasonName(message.stopReason));
    if (!message.errorMessage.isEmpty())
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
