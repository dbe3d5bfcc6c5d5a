#include "core/formats/anthropic_messages_codec.h"

#include "core/formats/anthropic_messages_stream_encoder.h"
#include "core/formats/decode_prologue.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

namespace sw::formats {

using namespace sw::model;

namespace {

// Marks a Google function call's thoughtSignature carried in a thinking block. Gemini
// signatures are base64, so they never start with this text.
constexpr const char *kFunctionCallCarrier = "fc.";

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

bool decodeImage(const QJsonObject &block, ContentBlock *out, const QString &where, GatewayError *error) {
    const QJsonObject source = block.value(L("source")).toObject();
    const QString kind = source.value(L("type")).toString();
    out->type = BlockType::Image;
    if (kind == L("base64")) {
        out->mimeType = source.value(L("media_type")).toString();
        out->data = source.value(L("data")).toString().toLatin1();
        if (out->data.isEmpty())
            return rejectRequest(error, where + L(".source.data: required string"));
        return true;
    }
    if (kind == L("url")) {
        out->url = source.value(L("url")).toString();
        return true;
    }
    if (kind == L("file")) {
        out->url = source.value(L("file_id")).toString();
        return true;
    }
    return rejectRequest(error, where + L(".source.type: must be base64, url or file"));
}

// Blocks of a user turn, and of a tool_result's content (text and images).
bool decodeUserBlocks(const QJsonValue &content, QList<ContentBlock> *out, const QString &where, GatewayError *error,
                      QList<Message> *toolResults) {
    if (content.isString()) {
        out->append(ContentBlock::makeText(content.toString()));
        return true;
    }
    if (!content.isArray())
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    const QJsonArray blocks = content.toArray();
    for (qsizetype i = 0; i < blocks.size(); ++i) {
        const QString at = QStringLiteral("%1[%2]").arg(where).arg(i);
        const QJsonObject b = blocks.at(i).toObject();
        const QString type = b.value(L("type")).toString();
        if (type == L("text")) {
            out->append(ContentBlock::makeText(b.value(L("text")).toString()));
        } else if (type == L("image")) {
            ContentBlock img;
            if (!decodeImage(b, &img, at, error))
                return false;
            out->append(img);
        } else if (type == L("tool_result") && toolResults) {
            Message r;
            r.role = Role::ToolResult;
            r.toolCallId = b.value(L("tool_use_id")).toString();
            if (r.toolCallId.isEmpty())
                return rejectRequest(error, at + L(".tool_use_id: required string"));
            r.isError = b.value(L("is_error")).toBool(false);
            const QJsonValue c = b.value(L("content"));
            if (!c.isUndefined() && !c.isNull() && !decodeUserBlocks(c, &r.content, at + L(".content"), error, nullptr))
                return false;
            toolResults->append(r);
        } else if (type.isEmpty()) {
            return rejectRequest(error, at + L(".type: required string"));
        }
        // document, search_result, server tool blocks...: kept in raw for passthrough only.
    }
    return true;
}

bool decodeAssistantBlocks(const QJsonValue &content, Message *msg, const QString &where, GatewayError *error) {
    if (content.isString()) {
        msg->content.append(ContentBlock::makeText(content.toString()));
        return true;
    }
    if (!content.isArray())
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    const QJsonArray blocks = content.toArray();
    QString pendingCallSignature;
    for (qsizetype i = 0; i < blocks.size(); ++i) {
        const QJsonObject b = blocks.at(i).toObject();
        const QString type = b.value(L("type")).toString();
        ContentBlock out;
        if (type == L("text")) {
            out = ContentBlock::makeText(b.value(L("text")).toString());
        } else if (type == L("thinking")) {
            out.type = BlockType::Thinking;
            out.text = b.value(L("thinking")).toString();
            // A tagged signature was made by another API (an answer after a failover);
            // an untagged one is Anthropic's own (formats/translation_rules.md).
            const TaggedSignature sig = untagSignature(b.value(L("signature")).toString());
            out.signature = sig.signature;
            out.signatureApi = sig.api;
            if (sig.api == wire::apiName(wire::Api::Google) && sig.signature.startsWith(L(kFunctionCallCarrier)) &&
                out.text.isEmpty()) {
                pendingCallSignature = sig.signature.mid(qsizetype(qstrlen(kFunctionCallCarrier)));
                continue; // it belongs to the tool_use that follows
            }
        } else if (type == L("redacted_thinking")) {
            out.type = BlockType::Thinking;
            out.redacted = true;
            out.signature = b.value(L("data")).toString();
        } else if (type == L("tool_use")) {
            out.type = BlockType::ToolCall;
            if (!pendingCallSignature.isEmpty()) {
                out.signature = pendingCallSignature;
                out.signatureApi = wire::apiName(wire::Api::Google);
                pendingCallSignature.clear();
            }
            out.toolCallId = b.value(L("id")).toString();
            out.toolName = b.value(L("name")).toString();
            if (out.toolName.isEmpty())
                return rejectRequest(error, QStringLiteral("%1[%2].name: required string").arg(where).arg(i));
            out.arguments = b.value(L("input")).toObject();
            out.argumentsJson = QString::fromUtf8(wire::compactJson(out.arguments));
        } else {
            continue; // server_tool_use and friends: passthrough only
        }
        msg->content.append(out);
    }
    return true;
}

} // namespace

std::optional<model::ChatRequest> AnthropicMessagesCodec::decode(const QByteArray &body, GatewayError *error) const {
    auto begun = beginDecode(format(), body, error);
    if (!begun)
        return std::nullopt;
    model::ChatRequest req = std::move(*begun);
    const QJsonObject &o = req.raw;

    const QJsonValue system = o.value(L("system"));
    if (system.isString())
        req.context.systemPrompt = system.toString();
    else if (system.isArray())
        for (const QJsonValue &b : system.toArray()) {
            const QString t = b.toObject().value(L("text")).toString();
            if (!t.isEmpty())
                req.context.systemPrompt +=
                    (req.context.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + t;
        }
    else if (!system.isUndefined() && !system.isNull())
        return rejected(error, QStringLiteral("system: must be a string or an array of text blocks"));

    const QJsonValue messages = o.value(L("messages"));
    if (!messages.isArray())
        return rejected(error, QStringLiteral("messages: required array"));
    const QJsonArray list = messages.toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        const QString where = QStringLiteral("messages[%1]").arg(i);
        if (!list.at(i).isObject())
            return rejected(error, where + L(": must be an object"));
        const QJsonObject m = list.at(i).toObject();
        const QString role = m.value(L("role")).toString();
        const QJsonValue content = m.value(L("content"));
        if (role == L("user")) {
            Message msg;
            msg.role = Role::User;
            QList<Message> toolResults;
            if (!decodeUserBlocks(content, &msg.content, where + L(".content"), error, &toolResults))
                return std::nullopt;
            // Tool results answer the previous assistant turn, so they come before the user's text.
            req.context.messages.append(toolResults);
            if (!msg.content.isEmpty())
                req.context.messages.append(msg);
        } else if (role == L("assistant")) {
            Message msg;
            msg.role = Role::Assistant;
            msg.api = QString(wire::apiName(wire::Api::AnthropicMessages));
            if (!decodeAssistantBlocks(content, &msg, where + L(".content"), error))
                return std::nullopt;
            req.context.messages.append(msg);
        } else if (role == L("system")) {
            // Claude Code 2.x sends system messages between the turns (anthropic-beta
            // mid-conversation-system-2026-04-07). Same-API passthrough forwards them as
            // sent; for translation their text joins the system prompt.
            QString text;
            if (content.isString()) {
                text = content.toString();
            } else if (content.isArray()) {
                for (const QJsonValue &b : content.toArray()) {
                    if (b.toObject().value(L("type")).toString() != L("text"))
                        return rejected(error, where + L(".content: a system message holds text blocks only"));
                    text += (text.isEmpty() ? QString() : QStringLiteral("\n\n")) +
                            b.toObject().value(L("text")).toString();
                }
            } else {
                return rejected(error, where + L(".content: must be a string or an array of text blocks"));
            }
            if (!text.isEmpty())
                req.context.systemPrompt +=
                    (req.context.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + text;
        } else {
            return rejected(error, where + L(".role: must be user, assistant or system"));
        }
    }
    // Tool names of results come from the tool_use blocks they answer.
    QHash<QString, QString> toolNames;
    for (Message &msg : req.context.messages) {
        if (msg.role == Role::Assistant)
            for (const ContentBlock &b : msg.content)
                if (b.type == BlockType::ToolCall)
                    toolNames.insert(b.toolCallId, b.toolName);
        if (msg.role == Role::ToolResult)
            msg.toolName = toolNames.value(msg.toolCallId);
    }

    const QJsonValue stream = o.value(L("stream"));
    if (!stream.isUndefined() && !stream.isNull() && !stream.isBool())
        return rejected(error, QStringLiteral("stream: must be a boolean"));
    req.stream = stream.toBool(false);

    Options &opt = req.options;
    for (const char *key : {"max_tokens", "temperature", "top_p", "top_k"}) {
        const QJsonValue v = o.value(L(key));
        if (!v.isUndefined() && !v.isNull() && !v.isDouble())
            return rejected(error, QString::fromLatin1(key) + L(": must be a number"));
    }
    if (o.value(L("max_tokens")).isDouble())
        opt.maxTokens = o.value(L("max_tokens")).toInt();
    if (o.value(L("temperature")).isDouble())
        opt.temperature = o.value(L("temperature")).toDouble();
    if (o.value(L("top_p")).isDouble())
        opt.topP = o.value(L("top_p")).toDouble();
    if (o.value(L("top_k")).isDouble())
        opt.topK = o.value(L("top_k")).toInt();
    for (const QJsonValue &s : o.value(L("stop_sequences")).toArray())
        opt.stop << s.toString();
    const QJsonObject thinking = o.value(L("thinking")).toObject();
    if (thinking.value(L("type")).toString() == L("enabled") && thinking.value(L("budget_tokens")).isDouble())
        opt.thinkingBudget = thinking.value(L("budget_tokens")).toInt();
    opt.reasoning = o.value(L("output_config")).toObject().value(L("effort")).toString();

    const QJsonValue tools = o.value(L("tools"));
    if (!tools.isUndefined() && !tools.isNull() && !tools.isArray())
        return rejected(error, QStringLiteral("tools: must be an array"));
    const QJsonArray toolList = tools.toArray();
    for (qsizetype i = 0; i < toolList.size(); ++i) {
        const QJsonObject t = toolList.at(i).toObject();
        const QString type = t.value(L("type")).toString();
        if (type.startsWith(L("web_search_"))) {
            req.context.builtinTools.append(BuiltinTool{QStringLiteral("web_search"), t});
            continue;
        }
        if (!type.isEmpty() && type != L("custom")) {
            // bash_…, text_editor_…, code_execution_…, web_fetch_…: Anthropic's own; no mapping.
            req.context.builtinTools.append(BuiltinTool{type, t});
            continue;
        }
        Tool tool;
        tool.name = t.value(L("name")).toString();
        if (tool.name.isEmpty())
            return rejected(error, QStringLiteral("tools[%1].name: required string").arg(i));
        tool.description = t.value(L("description")).toString();
        tool.parameters = t.value(L("input_schema")).toObject();
        if (t.value(L("strict")).isBool())
            tool.strict = t.value(L("strict")).toBool();
        req.context.tools.append(tool);
    }
    const QJsonObject choice = o.value(L("tool_choice")).toObject();
    const QString choiceType = choice.value(L("type")).toString();
    if (choiceType == L("any"))
        opt.toolChoice = QStringLiteral("required");
    else if (choiceType == L("tool"))
        opt.toolChoice = choice.value(L("name")).toString();
    else
        opt.toolChoice = choiceType; // auto, none or ""
    if (choice.value(L("disable_parallel_tool_use")).toBool(false))
        opt.parallelToolCalls = false;
    // Structured outputs: output_config.format (GA) or the beta's output_format.
    QJsonObject format = o.value(L("output_config")).toObject().value(L("format")).toObject();
    if (format.isEmpty())
        format = o.value(L("output_format")).toObject();
    if (format.value(L("type")).toString() == L("json_schema")) {
        opt.outputFormat.type = QStringLiteral("json_schema");
        opt.outputFormat.schema = format.value(L("schema")).toObject();
        opt.outputFormat.strict = true; // Anthropic's structured outputs always follow the schema
    }
    return req;
}

std::unique_ptr<StreamEncoder> AnthropicMessagesCodec::makeStreamEncoder(const EncodeInfo &info) const {
    return std::make_unique<AnthropicMessagesStreamEncoder>(info);
}

QLatin1String AnthropicMessagesCodec::stopReasonName(StopReason reason) {
    switch (reason) {
    case StopReason::Length:
        return L("max_tokens");
    case StopReason::ToolUse:
        return L("tool_use");
    case StopReason::Refusal:
        return L("refusal");
    case StopReason::Error:
    case StopReason::Stop:
    case StopReason::Aborted:
        break;
    }
    return L("end_turn");
}

QString AnthropicMessagesCodec::errorType(ErrorCategory category) {
    switch (category) {
    case ErrorCategory::InvalidRequest:
    case ErrorCategory::Conflict:
    case ErrorCategory::UnsupportedMedia:
        return QStringLiteral("invalid_request_error");
    case ErrorCategory::Authentication:
        return QStringLiteral("authentication_error");
    case ErrorCategory::Permission:
        return QStringLiteral("permission_error");
    case ErrorCategory::NotFound:
        return QStringLiteral("not_found_error");
    case ErrorCategory::PayloadTooLarge:
        return QStringLiteral("request_too_large");
    case ErrorCategory::RateLimit:
        return QStringLiteral("rate_limit_error");
    case ErrorCategory::Overloaded:
        return QStringLiteral("overloaded_error");
    case ErrorCategory::ServerError:
    case ErrorCategory::Timeout:
        break;
    }
    return QStringLiteral("api_error");
}

void AnthropicMessagesCodec::writeError(wire::JsonWriter &w, const GatewayError &error) {
    QString type = errorType(error.category);
    QString message = error.message;
    if (error.upstreamApi == wire::apiName(wire::Api::AnthropicMessages) && !error.code.isEmpty()) {
        type = error.code; // Anthropic's own error type, as sent
    } else {
        switch (error.portable()) {
        case GatewayError::Portable::ContextLength:
            // Claude Code compacts the conversation when it reads this phrase.
            type = QStringLiteral("invalid_request_error");
            if (!message.contains(QLatin1String("prompt is too long"), Qt::CaseInsensitive))
                message = QStringLiteral("prompt is too long: ") + message;
            break;
        case GatewayError::Portable::RateLimit:
            type = QStringLiteral("rate_limit_error");
            break;
        case GatewayError::Portable::Overloaded:
            type = QStringLiteral("overloaded_error");
            break;
        case GatewayError::Portable::Authentication:
            type = QStringLiteral("authentication_error");
            break;
        case GatewayError::Portable::None:
            break;
        }
    }
    w.beginObject()
        .field("type", "error")
        .key("error")
        .beginObject()
        .field("type", type)
        .field("message", message)
        .endObject()
        .endObject();
}

void AnthropicMessagesCodec::writeUsage(wire::JsonWriter &w, const Usage &usage) {
    w.beginObject()
        .field("input_tokens", usage.input)
        .field("cache_creation_input_tokens", usage.cacheWrite)
        .field("cache_read_input_tokens", usage.cacheRead)
        .field("output_tokens", usage.output)
        .endObject();
}

QString AnthropicMessagesCodec::signatureFor(const ContentBlock &thinking, const QString &upstreamApi) {
    const QString maker = thinking.signatureApi.isEmpty() ? upstreamApi : thinking.signatureApi;
    if (maker == wire::apiName(wire::Api::AnthropicMessages) || maker.isEmpty())
        return thinking.signature;
    // Tagged even when empty: the client sends the block back, and the tag says it is foreign.
    return tagSignature(maker, thinking.signature);
}

std::optional<QString> AnthropicMessagesCodec::functionCallSignature(const ContentBlock &call,
                                                                     const QString &upstreamApi) {
    const QString maker = call.signatureApi.isEmpty() ? upstreamApi : call.signatureApi;
    if (call.signature.isEmpty() || maker != wire::apiName(wire::Api::Google))
        return std::nullopt;
    return tagSignature(maker, QLatin1String(kFunctionCallCarrier) + call.signature);
}

QByteArray AnthropicMessagesCodec::encodeResponse(const AssistantMessage &message, const EncodeInfo &info) const {
    const bool sameApi = info.upstreamApi == wire::apiName(wire::Api::AnthropicMessages);
    if (sameApi && !message.native.isEmpty() && message.stopReason != StopReason::Error &&
        message.stopReason != StopReason::Aborted) {
        // Same API: the upstream's own message, every field it defines (stop_sequence,
        // citations, server tool blocks, usage.server_tool_use), as a passthrough stream shows.
        wire::JsonWriter w(1024);
        w.objectWith(message.native, {{L("model"), info.model}});
        return w.take();
    }
    // The upstream's own id when it is the client's API (what a passthrough stream shows too).
    const QString &id = sameApi && !message.responseId.isEmpty() ? message.responseId : info.responseId;
    wire::JsonWriter w(512);
    w.beginObject()
        .field("id", id)
        .field("type", "message")
        .field("role", "assistant")
        .field("model", info.model)
        .key("content")
        .beginArray();
    for (const ContentBlock &b : message.content) {
        switch (b.type) {
        case BlockType::Text:
            w.beginObject().field("type", "text").field("text", b.text).endObject();
            break;
        case BlockType::Thinking:
            if (b.redacted)
                w.beginObject().field("type", "redacted_thinking").field("data", b.signature).endObject();
            else
                w.beginObject()
                    .field("type", "thinking")
                    .field("thinking", b.text)
                    .field("signature", signatureFor(b, info.upstreamApi))
                    .endObject();
            break;
        case BlockType::ToolCall:
            if (const auto carrier = functionCallSignature(b, info.upstreamApi))
                w.beginObject()
                    .field("type", "thinking")
                    .field("thinking", QString())
                    .field("signature", *carrier)
                    .endObject();
            w.beginObject()
                .field("type", "tool_use")
                .field("id", b.toolCallId)
                .field("name", b.toolName)
                .field("input", b.arguments)
                .endObject();
            break;
        case BlockType::Image:
            break; // Messages answers carry no images
        }
    }
    w.endArray().field("stop_reason", stopReasonName(message.stopReason)).key("stop_sequence").null().key("usage");
    writeUsage(w, message.usage);
    w.endObject();
    return w.take();
}

QByteArray AnthropicMessagesCodec::encodeError(const GatewayError &error) const {
    wire::JsonWriter w(96 + error.message.size());
    writeError(w, error);
    return w.take();
}

} // namespace sw::formats
