#include "core/formats/openai_chat_codec.h"

#include "core/formats/decode_prologue.h"
#include "core/formats/openai_chat_stream_encoder.h"
#include "core/formats/openai_responses_codec.h"
#include "core/model/event_accumulator.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

namespace sw::formats {

using namespace sw::model;

namespace {

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

ContentBlock imageFromUrl(const QString &url) {
    ContentBlock b;
    b.type = BlockType::Image;
    if (!wire::splitDataUri(url, &b.mimeType, &b.data))
        b.url = url;
    return b;
}

// User content: a string or an array of parts (text, image_url; others ignored).
bool decodeUserContent(const QJsonValue &content, QList<ContentBlock> *out, const QString &where, GatewayError *error) {
    if (content.isString()) {
        out->append(ContentBlock::makeText(content.toString()));
        return true;
    }
    if (content.isNull() || content.isUndefined())
        return true;
    if (!content.isArray())
        return rejectRequest(error, where + L(".content: must be a string or an array of content parts"));
    const QJsonArray parts = content.toArray();
    for (qsizetype i = 0; i < parts.size(); ++i) {
        const QJsonObject part = parts.at(i).toObject();
        const QString type = part.value(L("type")).toString();
        if (type == L("text")) {
            out->append(ContentBlock::makeText(part.value(L("text")).toString()));
        } else if (type == L("image_url")) {
            const QJsonValue iu = part.value(L("image_url"));
            const QString url = iu.isString() ? iu.toString() : iu.toObject().value(L("url")).toString();
            if (url.isEmpty())
                return rejectRequest(error, QStringLiteral("%1.content[%2].image_url.url: required").arg(where).arg(i));
            ContentBlock image = imageFromUrl(url);
            image.detail = iu.toObject().value(L("detail")).toString();
            out->append(image);
        }
        // input_audio, file and future part types are kept in `raw` only.
    }
    return true;
}

bool decodeMessage(const QJsonObject &m, const QString &where, model::ChatRequest *req, GatewayError *error) {
    const QString role = m.value(L("role")).toString();
    if (role.isEmpty())
        return rejectRequest(error, where + L(".role: required string"));
    Context &ctx = req->context;
    if (role == L("system") || role == L("developer")) {
        const QString text = wire::textOfContent(m.value(L("content")));
        if (!text.isEmpty())
            ctx.systemPrompt += (ctx.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + text;
        return true;
    }
    if (role == L("user")) {
        Message msg;
        msg.role = Role::User;
        if (!decodeUserContent(m.value(L("content")), &msg.content, where, error))
            return false;
        ctx.messages.append(msg);
        return true;
    }
    if (role == L("assistant")) {
        Message msg;
        msg.role = Role::Assistant;
        msg.api = QString(wire::apiName(wire::Api::OpenAICompletions));
        for (const char *key : {"reasoning_content", "reasoning", "reasoning_text"}) {
            const QString r = m.value(L(key)).toString();
            if (!r.isEmpty()) {
                ContentBlock t;
                t.type = BlockType::Thinking;
                t.text = r;
                msg.content.append(t);
                break;
            }
        }
        const QString text = wire::textOfContent(m.value(L("content")));
        if (!text.isEmpty())
            msg.content.append(ContentBlock::makeText(text));
        const QJsonValue calls = m.value(L("tool_calls"));
        if (!calls.isUndefined() && !calls.isNull() && !calls.isArray())
            return rejectRequest(error, where + L(".tool_calls: must be an array"));
        QJsonArray callList = calls.toArray();
        if (m.value(L("function_call")).isObject()) // legacy single call
            callList.append(QJsonObject{{L("id"), QString()}, {L("function"), m.value(L("function_call"))}});
        for (const QJsonValue &cv : callList) {
            const QJsonObject c = cv.toObject();
            const QJsonObject fn = c.value(L("function")).toObject();
            ContentBlock b;
            b.type = BlockType::ToolCall;
            b.toolCallId = c.value(L("id")).toString();
            b.toolName = fn.value(L("name")).toString();
            const QJsonValue args = fn.value(L("arguments"));
            b.argumentsJson = args.isObject() ? QString::fromUtf8(wire::compactJson(args.toObject())) : args.toString();
            b.arguments = parseToolArguments(b.argumentsJson);
            msg.content.append(b);
        }
        ctx.messages.append(msg);
        return true;
    }
    if (role == L("tool") || role == L("function")) {
        Message msg;
        msg.role = Role::ToolResult;
        msg.toolCallId = m.value(L("tool_call_id")).toString();
        msg.toolName = m.value(L("name")).toString();
        if (msg.toolName.isEmpty()) {
            // The tool's name is only on the assistant turn that called it.
            for (auto it = ctx.messages.crbegin(); it != ctx.messages.crend() && msg.toolName.isEmpty(); ++it)
                for (const ContentBlock &b : it->content)
                    if (b.type == BlockType::ToolCall && b.toolCallId == msg.toolCallId)
                        msg.toolName = b.toolName;
        }
        const QJsonValue content = m.value(L("content"));
        if (content.isArray()) {
            if (!decodeUserContent(content, &msg.content, where, error))
                return false;
        } else {
            msg.content.append(ContentBlock::makeText(content.toString()));
        }
        ctx.messages.append(msg);
        return true;
    }
    return rejectRequest(error, where + L(".role: unknown role '") + role + L("'"));
}

bool optionalNumber(const QJsonObject &o, const char *key, std::optional<double> *out, GatewayError *error) {
    const QJsonValue v = o.value(L(key));
    if (v.isUndefined() || v.isNull())
        return true;
    if (!v.isDouble())
        return rejectRequest(error, QString::fromLatin1(key) + L(": must be a number"));
    *out = v.toDouble();
    return true;
}

bool optionalInt(const QJsonObject &o, const char *key, std::optional<int> *out, GatewayError *error) {
    std::optional<double> d;
    if (!optionalNumber(o, key, &d, error))
        return false;
    if (d)
        *out = int(qBound(0.0, *d, 2147483647.0)); // out-of-range doubles must not reach int
    return true;
}

} // namespace

std::optional<model::ChatRequest> OpenAIChatCodec::decode(const QByteArray &body, GatewayError *error) const {
    auto begun = beginDecode(format(), body, error);
    if (!begun)
        return std::nullopt;
    model::ChatRequest req = std::move(*begun);
    const QJsonObject &o = req.raw;
    const QJsonValue messages = o.value(L("messages"));
    if (!messages.isArray()) {
        rejectRequest(error, QStringLiteral("messages: required array"));
        return std::nullopt;
    }
    const QJsonArray list = messages.toArray();
    for (qsizetype i = 0; i < list.size(); ++i) {
        if (!list.at(i).isObject()) {
            rejectRequest(error, QStringLiteral("messages[%1]: must be an object").arg(i));
            return std::nullopt;
        }
        if (!decodeMessage(list.at(i).toObject(), QStringLiteral("messages[%1]").arg(i), &req, error))
            return std::nullopt;
    }

    const QJsonValue stream = o.value(L("stream"));
    if (!stream.isUndefined() && !stream.isNull() && !stream.isBool()) {
        rejectRequest(error, QStringLiteral("stream: must be a boolean"));
        return std::nullopt;
    }
    req.stream = stream.toBool(false);
    req.includeUsage = o.value(L("stream_options")).toObject().value(L("include_usage")).toBool(false);

    Options &opt = req.options;
    std::optional<int> maxTokens;
    if (!optionalInt(o, "max_completion_tokens", &opt.maxTokens, error) ||
        !optionalInt(o, "max_tokens", &maxTokens, error))
        return std::nullopt;
    if (!opt.maxTokens)
        opt.maxTokens = maxTokens;
    if (!optionalNumber(o, "temperature", &opt.temperature, error) || !optionalNumber(o, "top_p", &opt.topP, error) ||
        !optionalNumber(o, "presence_penalty", &opt.presencePenalty, error) ||
        !optionalNumber(o, "frequency_penalty", &opt.frequencyPenalty, error))
        return std::nullopt;
    const QJsonValue stop = o.value(L("stop"));
    if (stop.isString())
        opt.stop << stop.toString();
    else
        for (const QJsonValue &s : stop.toArray())
            opt.stop << s.toString();
    opt.reasoning = o.value(L("reasoning_effort")).toString();
    if (opt.reasoning.isEmpty())
        opt.reasoning = o.value(L("reasoning")).toObject().value(L("effort")).toString(); // OpenRouter style

    const QJsonValue tools = o.value(L("tools"));
    if (!tools.isUndefined() && !tools.isNull() && !tools.isArray()) {
        rejectRequest(error, QStringLiteral("tools: must be an array"));
        return std::nullopt;
    }
    QJsonArray toolList = tools.toArray();
    for (const QJsonValue &f : o.value(L("functions")).toArray()) // legacy
        toolList.append(QJsonObject{{L("type"), L("function")}, {L("function"), f}});
    for (qsizetype i = 0; i < toolList.size(); ++i) {
        const QJsonObject t = toolList.at(i).toObject();
        const QString type = t.value(L("type")).toString(QStringLiteral("function"));
        if (type == L("custom")) {
            // A free-form tool: {custom: {name, description, format}}, the format's grammar
            // nested as {type: grammar, grammar: {syntax, definition}}.
            const QJsonObject c = t.value(L("custom")).toObject();
            Tool tool;
            tool.custom = true;
            tool.name = c.value(L("name")).toString();
            if (tool.name.isEmpty()) {
                rejectRequest(error, QStringLiteral("tools[%1].custom.name: required string").arg(i));
                return std::nullopt;
            }
            tool.description = c.value(L("description")).toString();
            const QJsonObject format = c.value(L("format")).toObject();
            tool.format = format.value(L("grammar")).isObject() ? format.value(L("grammar")).toObject() : format;
            if (format.value(L("grammar")).isObject())
                tool.format.insert(L("type"), L("grammar"));
            tool.parameters = customToolParameters();
            req.context.tools.append(tool);
            continue;
        }
        if (type != L("function")) {
            req.context.builtinTools.append(BuiltinTool{type, t}); // no mapping: incompatible elsewhere
            continue;
        }
        const QJsonObject fn = t.value(L("function")).toObject();
        Tool tool;
        tool.name = fn.value(L("name")).toString();
        if (tool.name.isEmpty()) {
            rejectRequest(error, QStringLiteral("tools[%1].function.name: required string").arg(i));
            return std::nullopt;
        }
        tool.description = fn.value(L("description")).toString();
        tool.parameters = fn.value(L("parameters")).toObject();
        if (fn.value(L("strict")).isBool())
            tool.strict = fn.value(L("strict")).toBool();
        req.context.tools.append(tool);
    }
    if (o.value(L("web_search_options")).isObject()) // search models' built-in web search
        req.context.builtinTools.append(
            BuiltinTool{QStringLiteral("web_search"), o.value(L("web_search_options")).toObject()});
    const QJsonValue choice = o.value(L("tool_choice"));
    if (choice.isString())
        opt.toolChoice = choice.toString();
    else if (choice.isObject()) {
        const QJsonObject c = choice.toObject();
        opt.toolChoice = c.value(L("function"))
                             .toObject()
                             .value(L("name"))
                             .toString(c.value(L("custom")).toObject().value(L("name")).toString());
    }
    if (o.value(L("parallel_tool_calls")).isBool())
        opt.parallelToolCalls = o.value(L("parallel_tool_calls")).toBool();
    const QJsonObject format = o.value(L("response_format")).toObject();
    const QString formatType = format.value(L("type")).toString();
    if (formatType == L("json_object")) {
        opt.outputFormat.type = formatType;
    } else if (formatType == L("json_schema")) {
        const QJsonObject js = format.value(L("json_schema")).toObject();
        opt.outputFormat.type = formatType;
        opt.outputFormat.name = js.value(L("name")).toString();
        opt.outputFormat.description = js.value(L("description")).toString();
        opt.outputFormat.schema = js.value(L("schema")).toObject();
        if (js.value(L("strict")).isBool())
            opt.outputFormat.strict = js.value(L("strict")).toBool();
    }
    return req;
}

std::unique_ptr<StreamEncoder> OpenAIChatCodec::makeStreamEncoder(const EncodeInfo &info) const {
    return std::make_unique<OpenAIChatStreamEncoder>(info);
}

QLatin1String OpenAIChatCodec::finishReason(StopReason reason) {
    switch (reason) {
    case StopReason::Length:
        return L("length");
    case StopReason::ToolUse:
        return L("tool_calls");
    case StopReason::Refusal:
        return L("content_filter");
    case StopReason::Error:
    case StopReason::Stop:
    case StopReason::Aborted:
        break;
    }
    return L("stop");
}

void OpenAIChatCodec::writeUsage(wire::JsonWriter &w, const Usage &usage) {
    // Canonical input excludes cached tokens; OpenAI's prompt_tokens includes them.
    const qint64 prompt = usage.input + usage.cacheRead + usage.cacheWrite;
    w.beginObject()
        .field("prompt_tokens", prompt)
        .field("completion_tokens", usage.output)
        .field("total_tokens", prompt + usage.output)
        .key("prompt_tokens_details")
        .beginObject()
        .field("cached_tokens", usage.cacheRead)
        .endObject()
        .endObject();
}

OpenAIChatCodec::ErrorFields OpenAIChatCodec::errorFields(const GatewayError &error) {
    const char *type = "invalid_request_error";
    const char *code = "invalid_request";
    switch (error.category) {
    case ErrorCategory::InvalidRequest:
        break;
    case ErrorCategory::Authentication:
        type = "authentication_error";
        code = "invalid_api_key";
        break;
    case ErrorCategory::Permission:
        type = "permission_error";
        code = "permission_denied";
        break;
    case ErrorCategory::NotFound:
        type = "not_found_error";
        code = "not_found";
        break;
    case ErrorCategory::Conflict:
        code = "conflict";
        break;
    case ErrorCategory::PayloadTooLarge:
        code = "request_too_large";
        break;
    case ErrorCategory::UnsupportedMedia:
        code = "unsupported_media_type";
        break;
    case ErrorCategory::RateLimit:
        type = "rate_limit_error";
        code = "rate_limit_exceeded";
        break;
    case ErrorCategory::ServerError:
        type = "server_error";
        code = "server_error";
        break;
    case ErrorCategory::Overloaded:
        type = "server_error";
        code = "overloaded";
        break;
    case ErrorCategory::Timeout:
        type = "server_error";
        code = "timeout";
        break;
    }
    ErrorFields out{QLatin1String(type), QLatin1String(code), QString()};
    if (error.upstreamApi == wire::apiName(wire::Api::OpenAICompletions) ||
        error.upstreamApi == wire::apiName(wire::Api::OpenAIResponses)) {
        // The same error vocabulary: code, type and param as the upstream sent them
        // (Codex and the SDKs read context_length_exceeded from here).
        if (!error.code.isEmpty())
            out.code = error.code;
        if (!error.providerType.isEmpty())
            out.type = error.providerType;
        if (!error.param.isEmpty())
            out.param = error.param;
    } else {
        switch (error.portable()) {
        case GatewayError::Portable::ContextLength:
            out.type = QStringLiteral("invalid_request_error");
            out.code = QStringLiteral("context_length_exceeded");
            out.param = QStringLiteral("messages");
            break;
        case GatewayError::Portable::RateLimit:
            out.code = QStringLiteral("rate_limit_exceeded");
            break;
        case GatewayError::Portable::Overloaded:
            out.code = QStringLiteral("server_is_overloaded");
            break;
        case GatewayError::Portable::Authentication:
            out.code = QStringLiteral("invalid_api_key");
            break;
        case GatewayError::Portable::None:
            break;
        }
    }
    return out;
}

void OpenAIChatCodec::writeError(wire::JsonWriter &w, const GatewayError &error) {
    const ErrorFields f = errorFields(error);
    w.beginObject().key("error").beginObject().field("message", error.message).field("type", f.type);
    if (f.param.isEmpty())
        w.key("param").null();
    else
        w.field("param", f.param);
    w.field("code", f.code).endObject().endObject();
}

QByteArray OpenAIChatCodec::encodeResponse(const AssistantMessage &message, const EncodeInfo &info) const {
    QString text;
    QString reasoning;
    bool hasToolCalls = false;
    for (const ContentBlock &b : message.content) {
        if (b.type == BlockType::Text)
            text += b.text;
        else if (b.type == BlockType::Thinking && !b.redacted)
            reasoning += b.text;
        else if (b.type == BlockType::ToolCall)
            hasToolCalls = true;
        // Images: chat completions has no image output.
    }
    // Same API: what the canonical message has no room for comes from the upstream's
    // stream as sent (logprobs, annotations, refusal, usage details, system_fingerprint).
    const bool sameApi = info.upstreamApi == wire::apiName(wire::Api::OpenAICompletions);
    static const QJsonObject kNone;
    const QJsonObject &native = sameApi ? message.native : kNone;
    const QString refusal = native.value(L("refusal")).toString();
    if (!refusal.isEmpty() && text.endsWith(refusal))
        text.chop(refusal.size()); // the canonical text carries the refusal too
    // The upstream's own id when it is the client's API (what a passthrough stream shows too).
    const QString &id = sameApi && !message.responseId.isEmpty() ? message.responseId : info.responseId;

    wire::JsonWriter w(256 + text.size() + reasoning.size());
    w.beginObject()
        .field("id", id)
        .field("object", "chat.completion")
        .field("created", info.createdSecs)
        .field("model", info.model)
        .key("choices")
        .beginArray()
        .beginObject()
        .field("index", 0)
        .key("message")
        .beginObject()
        .field("role", "assistant");
    if (text.isEmpty() && (hasToolCalls || !refusal.isEmpty()))
        w.key("content").null();
    else
        w.field("content", text);
    if (!refusal.isEmpty())
        w.field("refusal", refusal);
    if (!reasoning.isEmpty())
        w.field("reasoning_content", reasoning);
    if (hasToolCalls) {
        w.key("tool_calls").beginArray();
        for (const ContentBlock &b : message.content) {
            if (b.type != BlockType::ToolCall)
                continue;
            w.beginObject().field("id", b.toolCallId);
            if (info.customTools.contains(b.toolName)) {
                w.field("type", "custom")
                    .key("custom")
                    .beginObject()
                    .field("name", b.toolName)
                    .field("input", OpenAIResponsesCodec::customInput(b))
                    .endObject();
            } else {
                w.field("type", "function").key("function").beginObject().field("name", b.toolName);
                if (b.argumentsJson.isEmpty())
                    w.field("arguments", QString::fromUtf8(wire::compactJson(b.arguments)));
                else
                    w.field("arguments", b.argumentsJson);
                w.endObject();
            }
            w.endObject();
        }
        w.endArray();
    }
    const QJsonValue annotations = native.value(L("annotations"));
    if (annotations.isArray())
        w.field("annotations", annotations);
    w.endObject(); // message
    const QJsonValue logprobs = native.value(L("logprobs"));
    if (logprobs.isObject())
        w.field("logprobs", logprobs);
    else
        w.key("logprobs").null();
    w.field("finish_reason", finishReason(message.stopReason)).endObject().endArray();
    const QJsonValue usage = native.value(L("usage"));
    if (usage.isObject())
        w.field("usage", usage);
    else
        writeUsage(w.key("usage"), message.usage);
    for (const char *key : {"service_tier", "system_fingerprint"}) {
        const QJsonValue v = native.value(L(key));
        if (v.isString())
            w.field(L(key), v);
    }
    w.endObject();
    return w.take();
}

QByteArray OpenAIChatCodec::encodeError(const GatewayError &error) const {
    wire::JsonWriter w(128 + error.message.size());
    writeError(w, error);
    return w.take();
}

} // namespace sw::formats
