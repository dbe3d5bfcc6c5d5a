#include "core/formats/openai_chat_codec.h"

#include "core/formats/unnamed_calls.h"
#include "core/wire/tool_call_id.h"

#include "core/formats/decode_prologue.h"
#include "core/formats/openai_chat_stream_encoder.h"
#include "core/formats/openai_responses_codec.h"
#include "core/model/event_accumulator.h"
#include "core/wire/document_part.h"
#include "core/wire/error_body.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/rapid_json.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonParseError>

namespace sw::formats {

using namespace sw::model;
namespace rj = sw::wire::rj;
using rj::Value;

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

// User content: a string or an array of parts (text, image_url, file; others ignored).
bool decodeUserContent(const Value *content, QList<ContentBlock> *out, const BodyPath &where, GatewayError *error) {
    if (rj::isString(content)) {
        out->append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    if (rj::isAbsent(content))
        return true;
    if (!content->IsArray())
        return rejectRequest(error, where + L(".content: must be a string or an array of content parts"));
    qsizetype i = 0;
    for (const Value &part : content->GetArray()) {
        const std::string_view type = rj::bytes(rj::member(&part, "type"));
        if (type == "text") {
            out->append(ContentBlock::makeText(rj::toString(rj::member(&part, "text"))));
        } else if (type == "image_url") {
            const Value *iu = rj::member(&part, "image_url");
            const QString url = rj::isString(iu) ? rj::toString(iu) : rj::toString(rj::member(iu, "url"));
            if (url.isEmpty())
                return rejectRequest(error, BodyPath(BodyPath(where, "content"), i) + L(".image_url.url: required"));
            ContentBlock image = imageFromUrl(url);
            image.detail = rj::toString(rj::member(iu, "detail"));
            out->append(image);
        } else if (type == "file" && wire::isTranslatableDocument(part)) {
            out->append(openAIFileDocument(rj::member(&part, "file")));
        }
        // input_audio, future part types are kept in the request's json only.
        ++i;
    }
    return true;
}

// One call of an assistant turn, from its `function: {name, arguments}` (its id is the caller's).
ContentBlock toolCall(const Value *fn) {
    ContentBlock b;
    b.type = BlockType::ToolCall;
    b.toolName = rj::toString(rj::member(fn, "name"));
    const Value *args = rj::member(fn, "arguments");
    // Arguments sent as an object (not the string the API defines): written as Qt writes it.
    b.argumentsJson =
        rj::asObject(args) ? QString::fromUtf8(wire::compactJson(rj::toQtObject(args))) : rj::toString(args);
    b.arguments = parseToolArguments(b.argumentsJson);
    return b;
}

// One call of a free-form (custom) tool, from its `custom: {name, input}`: the text is the whole input,
// carried as the one-string {input} argument every other API's function call can hold.
ContentBlock customToolCall(const Value *custom) {
    ContentBlock b;
    b.type = BlockType::ToolCall;
    b.custom = true;
    b.toolName = rj::toString(rj::member(custom, "name"));
    b.arguments = QJsonObject{{QStringLiteral("input"), rj::toString(rj::member(custom, "input"))}};
    b.argumentsJson = QString::fromUtf8(wire::compactJson(b.arguments));
    return b;
}

// A participant's `name` (several users or assistants in one conversation) has no field in the other
// APIs: it goes in front of what that participant said, so "who proposed Monday?" can still be
// answered after a conversion (a same-API request keeps the client's own body).
void foldSpeakerName(const Value *m, QList<ContentBlock> *content) {
    const QString name = rj::toString(rj::member(m, "name"));
    if (name.isEmpty())
        return;
    const QString label = name + QStringLiteral(": ");
    if (!content->isEmpty() && content->first().type == BlockType::Text)
        content->first().text.prepend(label);
    else
        content->prepend(ContentBlock::makeText(label.trimmed()));
}

bool decodeMessage(const Value *m, qsizetype index, const BodyPath &where, UnnamedCalls *unnamed,
                   model::ChatRequest *req, GatewayError *error) {
    const QString role = rj::toString(rj::member(m, "role"));
    if (role.isEmpty())
        return rejectRequest(error, where + L(".role: required string"));
    Context &ctx = req->context;
    if (role == L("system") || role == L("developer")) {
        const QString text = rj::textOfContent(rj::member(m, "content"));
        if (!text.isEmpty())
            ctx.systemPrompt += (ctx.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + text;
        return true;
    }
    if (role == L("user")) {
        Message msg;
        msg.role = Role::User;
        if (!decodeUserContent(rj::member(m, "content"), &msg.content, where, error))
            return false;
        foldSpeakerName(m, &msg.content);
        ctx.messages.append(msg);
        return true;
    }
    if (role == L("assistant")) {
        Message msg;
        msg.role = Role::Assistant;
        msg.api = QString(wire::apiName(wire::Api::OpenAICompletions));
        for (const char *key : {"reasoning_content", "reasoning", "reasoning_text"}) {
            const QString r = rj::toString(rj::member(m, key));
            if (!r.isEmpty()) {
                ContentBlock t;
                t.type = BlockType::Thinking;
                t.text = r;
                msg.content.append(t);
                break;
            }
        }
        QString text = rj::textOfContent(rj::member(m, "content"));
        // A refusal is what the model said in that turn: the canonical text carries it, as the
        // answer's encoder takes it out of the text (another API's model must know it refused).
        const QString refusal = rj::toString(rj::member(m, "refusal"));
        if (!refusal.isEmpty() && !text.endsWith(refusal))
            text += refusal;
        // An audio answer (`content: null, audio: {id, transcript, …}`, as the openai SDK keeps it and
        // OpenAI's audio guide sends it back): its transcript is what the model said, so another API's
        // model knows its own answer. The sound itself goes nowhere but OpenAI (named as dropped); a
        // turn given by its id alone makes another API's candidate incompatible.
        if (text.isEmpty())
            text = rj::toString(rj::member(rj::asObject(rj::member(m, "audio")), "transcript"));
        if (!text.isEmpty()) {
            QList<ContentBlock> said{ContentBlock::makeText(text)};
            foldSpeakerName(m, &said);
            msg.content.append(said);
        }
        const Value *calls = rj::member(m, "tool_calls");
        if (!rj::isAbsent(calls) && !calls->IsArray())
            return rejectRequest(error, where + L(".tool_calls: must be an array"));
        const Value *legacy = rj::asObject(rj::member(m, "function_call")); // legacy single call
        if (rj::arraySize(calls) > 0 || legacy)
            unnamed->beginTurn();
        qsizetype callIndex = 0;
        for (const Value &c : rj::elements(calls)) {
            ContentBlock call;
            if (rj::equals(rj::member(&c, "type"), "custom")) {
                // A free-form tool's call (openai-node ChatCompletionMessageCustomToolCall, and what this
                // gateway writes back for a custom tool): {custom: {name, input}}, no `function`. Read as
                // the Responses codec reads custom_tool_call, so its name and text reach any API.
                call = customToolCall(rj::member(&c, "custom"));
                if (call.toolName.isEmpty()) {
                    const BodyPath callsPath(where, "tool_calls");
                    return rejectRequest(error, BodyPath(callsPath, callIndex) + L(".custom.name: required string"));
                }
            } else {
                call = toolCall(rj::member(&c, "function"));
            }
            call.toolCallId = unnamed->callId(rj::toString(rj::member(&c, "id")), index, callIndex++, call.toolName);
            // Google's function-call signature, where Google's own Chat endpoint puts it (and the
            // answer's encoder too): it goes back to Gemini with its call, to no other API.
            if (const QString signature = wire::googleCallSignature(&c); !signature.isEmpty()) {
                call.signature = signature;
                call.signatureApi = wire::apiName(wire::Api::Google);
            }
            msg.content.append(call);
        }
        if (legacy) {
            ContentBlock call = toolCall(legacy);
            call.toolCallId = unnamed->callId(QString(), index, callIndex, call.toolName);
            msg.content.append(call);
        }
        ctx.messages.append(msg);
        return true;
    }
    if (role == L("tool") || role == L("function")) {
        Message msg;
        msg.role = Role::ToolResult;
        msg.toolCallId = rj::toString(rj::member(m, "tool_call_id"));
        msg.toolName = rj::toString(rj::member(m, "name"));
        if (msg.toolCallId.isEmpty()) {
            const auto [id, name] = unnamed->resultId(msg.toolName);
            msg.toolCallId = id;
            if (msg.toolName.isEmpty())
                msg.toolName = name;
        }
        if (msg.toolName.isEmpty() && !msg.toolCallId.isEmpty())
            msg.toolName = unnamed->nameOf(msg.toolCallId); // only the assistant turn that called it names it
        const Value *content = rj::member(m, "content");
        if (rj::asArray(content)) {
            if (!decodeUserContent(content, &msg.content, where, error))
                return false;
        } else {
            msg.content.append(ContentBlock::makeText(rj::toString(content)));
        }
        ctx.messages.append(msg);
        return true;
    }
    return rejectRequest(error, where + L(".role: unknown role '") + role + L("'"));
}

bool optionalNumber(const Value *o, const char *key, std::optional<double> *out, GatewayError *error) {
    const Value *v = rj::member(o, key);
    if (rj::isAbsent(v))
        return true;
    if (!rj::isNumber(v))
        return rejectRequest(error, QString::fromLatin1(key) + L(": must be a number"));
    *out = rj::toDouble(v);
    return true;
}

bool optionalInt(const Value *o, const char *key, std::optional<int> *out, GatewayError *error) {
    std::optional<double> d;
    if (!optionalNumber(o, key, &d, error))
        return false;
    if (d)
        *out = int(qBound(0.0, *d, 2147483647.0)); // out-of-range doubles must not reach int
    return true;
}

// One tool of "tools" (or of the legacy "functions", as {type: function, function}): a
// function, a free-form custom tool, or a provider's built-in tool kept as sent.
bool decodeTool(const Value *t, const Value *legacyFunction, qsizetype i, model::ChatRequest *req,
                GatewayError *error) {
    const QString type =
        legacyFunction ? QStringLiteral("function") : rj::toString(rj::member(t, "type"), QStringLiteral("function"));
    if (type == L("custom")) {
        // A free-form tool: {custom: {name, description, format}}, the format's grammar
        // nested as {type: grammar, grammar: {syntax, definition}}.
        const Value *c = rj::asObject(rj::member(t, "custom"));
        Tool tool;
        tool.custom = true;
        tool.name = rj::toString(rj::member(c, "name"));
        if (const auto problem = toolNameProblem(tool.name))
            return rejectRequest(error, QStringLiteral("tools[%1].custom.name: %2").arg(i).arg(*problem));
        tool.description = rj::toString(rj::member(c, "description"));
        const Value *format = rj::asObject(rj::member(c, "format"));
        const Value *grammar = rj::asObject(rj::member(format, "grammar"));
        tool.format = rj::toQtObject(grammar ? grammar : format);
        if (grammar)
            tool.format.insert(L("type"), L("grammar"));
        tool.parameters = customToolParameters();
        req->context.tools.append(tool);
        return true;
    }
    if (type != L("function")) {
        req->context.builtinTools.append(BuiltinTool{type, rj::toQtObject(t)}); // no mapping: incompatible elsewhere
        return true;
    }
    const Value *fn = legacyFunction ? legacyFunction : rj::member(t, "function");
    QString nameProblem;
    std::optional<Tool> tool = toolDefinition(fn, "parameters", /*withStrict=*/true, &nameProblem);
    if (!tool)
        return rejectRequest(error, QStringLiteral("tools[%1].function.name: %2").arg(i).arg(nameProblem));
    req->context.tools.append(*tool);
    return true;
}

} // namespace

std::optional<model::ChatRequest> OpenAIChatCodec::decode(const QByteArray &body, GatewayError *error) const {
    auto begun = beginDecode(format(), body, error);
    if (!begun)
        return std::nullopt;
    model::ChatRequest req = std::move(*begun);
    const Value *o = req.json->object();
    const Value *messages = rj::member(o, "messages");
    if (!rj::asArray(messages)) {
        rejectRequest(error, QStringLiteral("messages: required array"));
        return std::nullopt;
    }
    const BodyPath messagesPath("messages");
    UnnamedCalls unnamed;
    qsizetype index = 0;
    for (const Value &m : messages->GetArray()) {
        const BodyPath where(messagesPath, index);
        if (!m.IsObject()) {
            rejectRequest(error, where + L(": must be an object"));
            return std::nullopt;
        }
        if (!decodeMessage(&m, index++, where, &unnamed, &req, error))
            return std::nullopt;
    }

    const Value *stream = rj::member(o, "stream");
    if (!rj::isAbsent(stream) && !stream->IsBool()) {
        rejectRequest(error, QStringLiteral("stream: must be a boolean"));
        return std::nullopt;
    }
    req.stream = rj::toBool(stream, false);
    req.includeUsage = rj::toBool(rj::member(rj::member(o, "stream_options"), "include_usage"), false);

    Options &opt = req.options;
    std::optional<int> maxTokens;
    if (!optionalInt(o, "max_completion_tokens", &opt.maxTokens, error) ||
        !optionalInt(o, "max_tokens", &maxTokens, error))
        return std::nullopt;
    // Both caps, disagreeing: the smaller is the request's. A server reads one of the two, not
    // always the same (Ollama reads max_tokens alone); the budget reserved by one and the upstream
    // was asked for the other's million tokens (probe T3 F4). The same-API body then carries the
    // smaller under both names (OpenAICompletionsAdapter).
    if (!opt.maxTokens || (maxTokens && *maxTokens < *opt.maxTokens))
        opt.maxTokens = maxTokens;
    if (!optionalNumber(o, "temperature", &opt.temperature, error) || !optionalNumber(o, "top_p", &opt.topP, error) ||
        !optionalNumber(o, "presence_penalty", &opt.presencePenalty, error) ||
        !optionalNumber(o, "frequency_penalty", &opt.frequencyPenalty, error))
        return std::nullopt;
    if (!readStopSequences(rj::member(o, "stop"), "stop", true, &opt.stop, error))
        return std::nullopt;
    opt.reasoning = rj::toString(rj::member(o, "reasoning_effort"));
    // OpenRouter's unified reasoning object: an effort, or a budget (max_tokens), or enabled alone
    // (thinking at the default effort, medium), or enabled false (off); exclude keeps the reasoning
    // from the client. reasoning_effort, OpenAI's own field, wins.
    const Value *reasoning = rj::asObject(rj::member(o, "reasoning"));
    if (opt.reasoning.isEmpty() && reasoning) {
        const Value *enabled = rj::member(reasoning, "enabled");
        const Value *budget = rj::member(reasoning, "max_tokens");
        opt.reasoning = rj::toString(rj::member(reasoning, "effort"));
        if (enabled && enabled->IsBool() && !enabled->GetBool())
            opt.reasoning = QStringLiteral("none");
        else if (opt.reasoning.isEmpty() && rj::isNumber(budget) && rj::toDouble(budget) >= 1)
            opt.thinkingBudget = int(qMin(rj::toDouble(budget), 2147483647.0));
        else if (opt.reasoning.isEmpty() && enabled && enabled->IsBool())
            opt.reasoning = QStringLiteral("medium");
    }
    req.hideReasoning = rj::toBool(rj::member(reasoning, "exclude"), false);

    const Value *tools = rj::member(o, "tools");
    if (!rj::isAbsent(tools) && !tools->IsArray()) {
        rejectRequest(error, QStringLiteral("tools: must be an array"));
        return std::nullopt;
    }
    qsizetype toolIndex = 0;
    for (const Value &t : rj::elements(tools))
        if (!decodeTool(&t, nullptr, toolIndex++, &req, error))
            return std::nullopt;
    for (const Value &f : rj::elements(rj::member(o, "functions"))) // legacy
        if (!decodeTool(nullptr, &f, toolIndex++, &req, error))
            return std::nullopt;
    if (const Value *search = rj::asObject(rj::member(o, "web_search_options"))) // search models' web search
        req.context.builtinTools.append(BuiltinTool{QStringLiteral("web_search"), rj::toQtObject(search)});
    // The legacy "function_call" ("none", "auto" or {name}) says for "functions" what tool_choice
    // says for tools; tool_choice wins when both are sent.
    const Value *choice = rj::member(o, "tool_choice");
    if (rj::isAbsent(choice))
        choice = rj::member(o, "function_call");
    if (const Value *named = rj::asObject(choice); named && rj::isString(rj::member(named, "name")))
        opt.toolChoice = rj::toString(rj::member(named, "name")); // function_call: {name}
    else if (rj::isString(choice))
        opt.toolChoice = rj::toString(choice);
    else if (rj::asObject(choice))
        opt.toolChoice = rj::toString(rj::member(rj::member(choice, "function"), "name"),
                                      rj::toString(rj::member(rj::member(choice, "custom"), "name")));
    if (const Value *parallel = rj::member(o, "parallel_tool_calls"); parallel && parallel->IsBool())
        opt.parallelToolCalls = parallel->GetBool();
    const Value *format = rj::asObject(rj::member(o, "response_format"));
    const QString formatType = rj::toString(rj::member(format, "type"));
    if (formatType == L("json_object")) {
        opt.outputFormat.type = formatType;
    } else if (formatType == L("json_schema")) {
        const Value *js = rj::asObject(rj::member(format, "json_schema"));
        opt.outputFormat.type = formatType;
        opt.outputFormat.name = rj::toString(rj::member(js, "name"));
        opt.outputFormat.description = rj::toString(rj::member(js, "description"));
        opt.outputFormat.schema = rj::toQtObject(rj::member(js, "schema"));
        if (const Value *strict = rj::member(js, "strict"); strict && strict->IsBool())
            opt.outputFormat.strict = strict->GetBool();
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
        .endObject();
    if (usage.reasoning > 0) // an upstream that said how much of the output was reasoning
        w.key("completion_tokens_details").beginObject().field("reasoning_tokens", usage.reasoning).endObject();
    w.endObject();
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
        // A compatible server that says a context overflow in words alone (vLLM: "This model's maximum
        // context length is 32768 tokens", with the status as its code): Codex compacts on the code
        // alone (probe V1 F2). OpenAI's own codes for it stay as they came.
        if (error.portable() == GatewayError::Portable::ContextLength && out.code != "context_length_exceeded" &&
            out.code != "string_above_max_length" && out.code != "model_context_window_exceeded") {
            out.type = QStringLiteral("invalid_request_error");
            out.code = QStringLiteral("context_length_exceeded");
            if (out.param.isEmpty())
                out.param = QStringLiteral("messages");
        }
    } else if (error.upstreamApi.isEmpty() && (!error.code.isEmpty() || !error.param.isEmpty())) {
        // The gateway's own error that names its code and field (an unknown previous_response_id).
        if (!error.code.isEmpty())
            out.code = error.code;
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

void OpenAIChatCodec::writeError(wire::JsonWriter &w, const GatewayError &error, bool inBand) {
    const ErrorFields f = errorFields(error);
    w.beginObject().key("error").beginObject().field("message", error.message).field("type", f.type);
    if (f.param.isEmpty())
        w.key("param").null();
    else
        w.field("param", f.param);
    w.field("code", f.code);
    if (inBand && error.shouldRetry == false)
        w.field(wire::kShouldRetryMember, false);
    w.endObject().endObject();
}

void OpenAIChatCodec::writeCallSignature(wire::JsonWriter &w, const ContentBlock &call, const QString &upstreamApi) {
    if (!model::functionCallCarrier(call, upstreamApi))
        return;
    w.key("extra_content")
        .beginObject()
        .key("google")
        .beginObject()
        .field("thought_signature", call.signature)
        .endObject()
        .endObject();
}

QByteArray OpenAIChatCodec::encodeResponse(const AssistantMessage &message, const EncodeInfo &info) const {
    QString text;
    QString refusal; // OpenAI's refusal, from a Chat or Responses upstream: its own field
    QString reasoning;
    bool hasToolCalls = false;
    for (const ContentBlock &b : message.content) {
        if (b.type == BlockType::Text && b.refusal)
            refusal += b.text;
        else if (b.type == BlockType::Text)
            text += b.text;
        else if (b.type == BlockType::Thinking && !b.redacted && !info.hideReasoning)
            reasoning += b.text;
        else if (b.type == BlockType::ToolCall)
            hasToolCalls = true;
        // Images: chat completions has no image output.
    }
    qsizetype callChars = 0; // the writer sized for the calls' text too: no doubling copy of a long one
    for (const ContentBlock &b : message.content)
        if (b.type == BlockType::ToolCall)
            callChars += 256 + b.argumentsJson.size() + b.argumentsJson.size() / 8;
    // Same API: what the canonical message has no room for comes from the upstream's
    // stream as sent (logprobs, annotations, refusal, usage details, system_fingerprint).
    const bool sameApi = info.upstreamApi == wire::apiName(wire::Api::OpenAICompletions);
    static const QJsonObject kNone;
    const QJsonObject &native = sameApi ? message.native : kNone;
    // The upstream's own id when it is the client's API (what a passthrough stream shows too).
    const QString &id = sameApi && !message.responseId.isEmpty() ? message.responseId : info.responseId;

    wire::JsonWriter w(256 + text.size() + reasoning.size() + callChars);
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
    // OpenRouter's signed reasoning, as its stream gave it: the client sends it back on a tool loop
    // (a streaming client gets it in the relayed frames), and only OpenRouter is sent it.
    if (const QJsonValue details = native.value(L("reasoning_details")); details.isArray())
        w.field("reasoning_details", details);
    if (hasToolCalls) {
        w.key("tool_calls").beginArray();
        for (const ContentBlock &b : message.content) {
            if (b.type != BlockType::ToolCall)
                continue;
            w.beginObject().field("id", wire::clientToolCallId(b.toolCallId, wire::kChatMaxToolIdLength));
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
            writeCallSignature(w, b, info.upstreamApi);
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
    // A refusal in its own field is a finished answer (OpenAI's finish is "stop"); content_filter
    // is for a filter's or another API's refusal, and makes the SDKs' parse helpers throw.
    w.field("finish_reason", finishReason(refusal.isEmpty() ? message.stopReason : StopReason::Stop))
        .endObject()
        .endArray();
    // The upstream's usage object as it sent it (compact JSON text, see the decoder), redacted as
    // a relayed frame is (UpstreamAttempts::redactEvents).
    const QJsonValue usage = native.value(L("usage"));
    if (sameApi && !message.nativeUsageJson.isEmpty())
        w.key("usage").rawValue(message.nativeUsageJson);
    else if (usage.isObject())
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
