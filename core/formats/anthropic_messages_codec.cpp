#include "core/formats/anthropic_messages_codec.h"

#include "core/formats/anthropic_messages_stream_encoder.h"
#include "core/formats/decode_prologue.h"
#include "core/wire/document_part.h"
#include "core/wire/error_body.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/rapid_json.h"
#include "core/wire/tool_call_id.h"

#include <QJsonArray>

#include <QJsonDocument>
#include <QJsonParseError>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

namespace sw::formats {

using namespace sw::model;
namespace rj = sw::wire::rj;
using rj::Value;

namespace {

// A tool's input_examples said in a converted tool's description, up to about this much.
constexpr qsizetype kMaxInputExamplesBytes = 8 * 1024;

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

// A count the API defines as an integer (max_tokens, top_k, a thinking budget), read only when it
// is a whole number from `least` to INT_MAX (64.0 is one, as Anthropic's own API takes it). Anything
// else is refused as Anthropic refuses it, in the client's format, before any upstream is asked:
// read as an int it became 0 (64.7, 3000000000, 1e30), and a converted request asked for no tokens.
std::optional<int> wholeCount(const Value *v, int least) {
    const double d = rj::toDouble(v);
    if (!rj::isNumber(v) || !std::isfinite(d) || d != std::floor(d) || d < least ||
        d > double(std::numeric_limits<int>::max()))
        return std::nullopt;
    return int(d);
}

bool decodeImage(const Value *block, ContentBlock *out, const BodyPath &where, GatewayError *error) {
    const Value *source = rj::asObject(rj::member(block, "source"));
    const QString kind = rj::toString(rj::member(source, "type"));
    out->type = BlockType::Image;
    if (kind == L("base64")) {
        out->mimeType = wire::normalizedMediaType(rj::toString(rj::member(source, "media_type")));
        out->data = rj::toLatin1(rj::member(source, "data"));
        if (out->data.isEmpty())
            return rejectRequest(error, where + L(".source.data: required string"));
        out->mimeType = wire::sniffedImageType(out->mimeType, out->data);
        return true;
    }
    if (kind == L("url")) {
        out->url = rj::toString(rj::member(source, "url"));
        return true;
    }
    if (kind == L("file")) {
        out->url = rj::toString(rj::member(source, "file_id"));
        return true;
    }
    return rejectRequest(error, where + L(".source.type: must be base64, url or file"));
}

// A document block: a PDF (base64 or by URL), plain text, or an Anthropic file id, with its title.
// Its `context` (words about the document) follows it as text.
bool decodeDocument(const Value *block, QList<ContentBlock> *out, const BodyPath &where, GatewayError *error) {
    const Value *source = rj::asObject(rj::member(block, "source"));
    const QString kind = rj::toString(rj::member(source, "type"));
    ContentBlock doc;
    doc.type = BlockType::Document;
    doc.title = rj::toString(rj::member(block, "title"));
    if (kind == L("base64")) {
        doc.mimeType = wire::normalizedMediaType(rj::toString(rj::member(source, "media_type")));
        doc.data = rj::toLatin1(rj::member(source, "data"));
        if (doc.data.isEmpty())
            return rejectRequest(error, where + L(".source.data: required string"));
        readPlainTextDocument(&doc);
    } else if (kind == L("text")) {
        if (!rj::isString(rj::member(source, "data")))
            return rejectRequest(error, where + L(".source.data: required string"));
        doc.text = rj::toString(rj::member(source, "data"));
        doc.mimeType = QStringLiteral("text/plain");
    } else {
        doc.url = rj::toString(rj::member(source, kind == L("file") ? "file_id" : "url"));
        if (doc.url.isEmpty())
            return rejectRequest(error, where + (kind == L("file") ? L(".source.file_id: required string")
                                                                   : L(".source.url: required string")));
    }
    out->append(doc);
    if (const QString context = rj::toString(rj::member(block, "context")); !context.isEmpty())
        out->append(ContentBlock::makeText(context));
    return true;
}

// Blocks of a user turn, and of a tool_result's content (text, images and documents).
bool decodeUserBlocks(const Value *content, QList<ContentBlock> *out, const BodyPath &where, GatewayError *error,
                      QList<Message> *toolResults) {
    if (rj::isString(content)) {
        out->append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    if (!rj::asArray(content))
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    qsizetype i = 0;
    for (const Value &block : content->GetArray()) {
        const Value *b = &block;
        const BodyPath at(where, i);
        const QString type = rj::toString(rj::member(b, "type"));
        if (type == L("text")) {
            out->append(ContentBlock::makeText(rj::toString(rj::member(b, "text"))));
        } else if (type == L("image")) {
            ContentBlock img;
            if (!decodeImage(b, &img, at, error))
                return false;
            out->append(img);
        } else if (type == L("document") && wire::isTranslatableDocument(block)) {
            if (!decodeDocument(b, out, at, error))
                return false;
        } else if (type == L("tool_result") && toolResults) {
            Message r;
            r.role = Role::ToolResult;
            r.toolCallId = rj::toString(rj::member(b, "tool_use_id"));
            if (r.toolCallId.isEmpty())
                return rejectRequest(error, at + L(".tool_use_id: required string"));
            r.isError = rj::toBool(rj::member(b, "is_error"), false);
            const Value *c = rj::member(b, "content");
            if (!rj::isAbsent(c) && !decodeUserBlocks(c, &r.content, BodyPath(at, "content"), error, nullptr))
                return false;
            toolResults->append(r);
        } else if (type.isEmpty()) {
            return rejectRequest(error, at + L(".type: required string"));
        }
        // search_result, a document asking for citations, server tool blocks...: in the request's
        // json, for passthrough only.
        ++i;
    }
    return true;
}

bool decodeAssistantBlocks(const Value *content, Message *msg, const BodyPath &where, GatewayError *error) {
    if (rj::isString(content)) {
        msg->content.append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    if (!rj::asArray(content))
        return rejectRequest(error, where + L(": must be a string or an array of content blocks"));
    QString pendingCallSignature;
    qsizetype i = -1;
    for (const Value &block : content->GetArray()) {
        ++i;
        const Value *b = &block;
        const QString type = rj::toString(rj::member(b, "type"));
        ContentBlock out;
        if (type == L("text")) {
            out = ContentBlock::makeText(rj::toString(rj::member(b, "text")));
        } else if (type == L("thinking")) {
            out.type = BlockType::Thinking;
            out.text = rj::toString(rj::member(b, "thinking"));
            // A tagged signature was made by another API (an answer after a failover);
            // an untagged one is Anthropic's own (formats/translation_rules.md).
            const TaggedSignature sig = untagSignature(rj::toString(rj::member(b, "signature")));
            out.signature = sig.signature;
            out.signatureApi = sig.api;
            if (const QString carried = model::carriedCallSignature(sig, out.text); !carried.isEmpty()) {
                pendingCallSignature = carried;
                continue; // it belongs to the tool_use that follows
            }
        } else if (type == L("redacted_thinking")) {
            out.type = BlockType::Thinking;
            out.redacted = true;
            out.signature = rj::toString(rj::member(b, "data"));
        } else if (type == L("tool_use")) {
            out.type = BlockType::ToolCall;
            if (!pendingCallSignature.isEmpty()) {
                out.signature = pendingCallSignature;
                out.signatureApi = wire::apiName(wire::Api::Google);
                pendingCallSignature.clear();
            }
            out.toolCallId = rj::toString(rj::member(b, "id"));
            out.toolName = rj::toString(rj::member(b, "name"));
            if (out.toolName.isEmpty())
                return rejectRequest(error, BodyPath(where, i) + L(".name: required string"));
            out.arguments = rj::toQtObject(rj::member(b, "input"));
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
    const Value *o = req.json->object();

    const Value *system = rj::member(o, "system");
    if (rj::isString(system))
        req.context.systemPrompt = rj::toString(system);
    else if (rj::asArray(system))
        for (const Value &b : system->GetArray()) {
            const QString t = rj::toString(rj::member(&b, "text"));
            if (!t.isEmpty())
                req.context.systemPrompt +=
                    (req.context.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + t;
        }
    else if (!rj::isAbsent(system))
        return rejected(error, QStringLiteral("system: must be a string or an array of text blocks"));

    const Value *messages = rj::member(o, "messages");
    if (!rj::asArray(messages))
        return rejected(error, QStringLiteral("messages: required array"));
    const BodyPath messagesPath("messages");
    qsizetype i = -1;
    for (const Value &message : messages->GetArray()) {
        ++i;
        const BodyPath where(messagesPath, i);
        if (!message.IsObject())
            return rejected(error, where + L(": must be an object"));
        const Value *m = &message;
        const QString role = rj::toString(rj::member(m, "role"));
        const Value *content = rj::member(m, "content");
        if (role == L("user")) {
            Message msg;
            msg.role = Role::User;
            QList<Message> toolResults;
            if (!decodeUserBlocks(content, &msg.content, BodyPath(where, "content"), error, &toolResults))
                return std::nullopt;
            // Tool results answer the previous assistant turn, so they come before the user's text.
            req.context.messages.append(toolResults);
            if (!msg.content.isEmpty())
                req.context.messages.append(msg);
        } else if (role == L("assistant")) {
            Message msg;
            msg.role = Role::Assistant;
            msg.api = QString(wire::apiName(wire::Api::AnthropicMessages));
            if (!decodeAssistantBlocks(content, &msg, BodyPath(where, "content"), error))
                return std::nullopt;
            req.context.messages.append(msg);
        } else if (role == L("system")) {
            // Claude Code 2.x sends system messages between the turns (anthropic-beta
            // mid-conversation-system-2026-04-07). Same-API passthrough forwards them as
            // sent; for translation their text joins the system prompt. A tool change beside the
            // text (tool_addition, tool_removal: mid-conversation-tool-changes-2026-07-01) stays in
            // the request's json, for passthrough only, as a user turn's unknown blocks do.
            QString text;
            if (rj::isString(content)) {
                text = rj::toString(content);
            } else if (rj::asArray(content)) {
                qsizetype b = 0;
                for (const Value &block : content->GetArray()) {
                    const Value *type = rj::member(&block, "type");
                    if (rj::bytes(type).empty())
                        return rejected(error, BodyPath(BodyPath(where, "content"), b) + L(".type: required string"));
                    if (rj::equals(type, "text"))
                        text += (text.isEmpty() ? QString() : QStringLiteral("\n\n")) +
                                rj::toString(rj::member(&block, "text"));
                    ++b;
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

    const Value *stream = rj::member(o, "stream");
    if (!rj::isAbsent(stream) && !stream->IsBool())
        return rejected(error, QStringLiteral("stream: must be a boolean"));
    req.stream = rj::toBool(stream, false);

    Options &opt = req.options;
    for (const char *key : {"max_tokens", "temperature", "top_p", "top_k"}) {
        const Value *v = rj::member(o, key);
        if (!rj::isAbsent(v) && !v->IsNumber())
            return rejected(error, QString::fromLatin1(key) + L(": must be a number"));
    }
    // Anthropic's ranges: max_tokens from 1, top_k from 0.
    for (const auto &[key, least, out] :
         {std::tuple{"max_tokens", 1, &opt.maxTokens}, std::tuple{"top_k", 0, &opt.topK}}) {
        const Value *v = rj::member(o, key);
        if (!rj::isNumber(v))
            continue;
        *out = wholeCount(v, least);
        if (!*out)
            return rejected(error, QString::fromLatin1(key) + QStringLiteral(": must be an integer from %1 to %2")
                                                                  .arg(least)
                                                                  .arg(std::numeric_limits<int>::max()));
    }
    if (const Value *v = rj::member(o, "temperature"); rj::isNumber(v))
        opt.temperature = rj::toDouble(v);
    if (const Value *v = rj::member(o, "top_p"); rj::isNumber(v))
        opt.topP = rj::toDouble(v);
    if (!readStopSequences(rj::member(o, "stop_sequences"), "stop_sequences", false, &opt.stop, error))
        return std::nullopt;
    const Value *thinking = rj::asObject(rj::member(o, "thinking"));
    const Value *thinkingType = rj::member(thinking, "type");
    if (rj::equals(thinkingType, "enabled") && rj::isNumber(rj::member(thinking, "budget_tokens"))) {
        opt.thinkingBudget = wholeCount(rj::member(thinking, "budget_tokens"), 0);
        if (!opt.thinkingBudget)
            return rejected(error, QStringLiteral("thinking.budget_tokens: must be an integer from 0 to %1")
                                       .arg(std::numeric_limits<int>::max()));
    }
    // output_config.effort says how hard to think only while thinking is on. With thinking off
    // (disabled, or no `thinking`) it governs only how many tokens Claude spends on text and tool
    // calls; the other APIs have no such control for a model that is not thinking, so it turns no
    // reasoning on there (the dropped report names it: wire::droppedMembers).
    if (rj::equals(thinkingType, "enabled") || rj::equals(thinkingType, "adaptive"))
        opt.reasoning = rj::toString(rj::member(rj::member(o, "output_config"), "effort"));
    // Adaptive thinking (what current Claude clients send) with no effort named thinks at
    // Anthropic's default effort, high: another API gets that, not "no reasoning asked".
    if (opt.reasoning.isEmpty() && rj::equals(thinkingType, "adaptive"))
        opt.reasoning = QStringLiteral("high");
    opt.thinkingOff = rj::equals(thinkingType, "disabled");

    const Value *tools = rj::member(o, "tools");
    if (!rj::isAbsent(tools) && !tools->IsArray())
        return rejected(error, QStringLiteral("tools: must be an array"));
    qsizetype toolIndex = -1;
    for (const Value &tool : rj::elements(tools)) {
        ++toolIndex;
        const Value *t = &tool;
        const QString type = rj::toString(rj::member(t, "type"));
        if (type.startsWith(L("web_search_"))) {
            req.context.builtinTools.append(BuiltinTool{QStringLiteral("web_search"), rj::toQtObject(t)});
            continue;
        }
        if (!type.isEmpty() && type != L("custom")) {
            // bash_…, text_editor_…, code_execution_…, web_fetch_…: Anthropic's own; no mapping.
            req.context.builtinTools.append(BuiltinTool{type, rj::toQtObject(t)});
            continue;
        }
        QString nameProblem;
        std::optional<Tool> canonical = toolDefinition(t, "input_schema", /*withStrict=*/true, &nameProblem);
        if (!canonical)
            return rejected(error, QStringLiteral("tools[%1].name: %2").arg(toolIndex).arg(nameProblem));
        // Example calls steer how the model fills the arguments; no other API has the field, so a
        // converted tool says them in its description (the same API gets the client's own body).
        QByteArray examples;
        for (const Value &example : rj::elements(rj::asArray(rj::member(t, "input_examples")))) {
            if (examples.size() > kMaxInputExamplesBytes)
                break;
            examples.append(examples.isEmpty() ? "Examples of valid input:\n" : "\n");
            rj::appendCompact(examples, example);
        }
        if (!examples.isEmpty())
            canonical->description +=
                (canonical->description.isEmpty() ? QString() : QStringLiteral("\n\n")) + QString::fromUtf8(examples);
        req.context.tools.append(*canonical);
    }
    const Value *choice = rj::asObject(rj::member(o, "tool_choice"));
    const QString choiceType = rj::toString(rj::member(choice, "type"));
    if (choiceType == L("any"))
        opt.toolChoice = QStringLiteral("required");
    else if (choiceType == L("tool"))
        opt.toolChoice = rj::toString(rj::member(choice, "name"));
    else
        opt.toolChoice = choiceType; // auto, none or ""
    if (rj::toBool(rj::member(choice, "disable_parallel_tool_use"), false))
        opt.parallelToolCalls = false;
    // Structured outputs: output_config.format (GA) or the beta's output_format.
    const Value *format = rj::member(rj::member(o, "output_config"), "format");
    if (rj::isEmptyObject(format))
        format = rj::member(o, "output_format");
    format = rj::asObject(format);
    if (rj::equals(rj::member(format, "type"), "json_schema")) {
        opt.outputFormat.type = QStringLiteral("json_schema");
        opt.outputFormat.schema = rj::toQtObject(rj::member(format, "schema"));
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

void AnthropicMessagesCodec::writeStop(wire::JsonWriter &w, StopReason reason, const QString &stopSequence) {
    if (reason == StopReason::Stop && !stopSequence.isEmpty())
        w.field("stop_reason", "stop_sequence").field("stop_sequence", stopSequence);
    else
        w.field("stop_reason", stopReasonName(reason)).key("stop_sequence").null();
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

void AnthropicMessagesCodec::writeError(wire::JsonWriter &w, const GatewayError &error, bool inBand) {
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
    w.beginObject().field("type", "error").key("error").beginObject().field("type", type).field("message", message);
    if (inBand && error.shouldRetry == false)
        w.field(wire::kShouldRetryMember, false);
    w.endObject().endObject();
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

QString AnthropicMessagesCodec::clientToolId(const QString &id, QSet<QString> &taken, QHash<QString, int> &nextSuffix) {
    const QString unique =
        wire::uniqueToolId(wire::anthropicToolId(id), taken, wire::kAnthropicMaxToolIdLength, nextSuffix);
    taken.insert(unique);
    return unique;
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
    QSet<QString> takenToolIds = info.takenToolIds;
    QHash<QString, int> toolIdSuffixes;
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
            if (const auto carrier = model::functionCallCarrier(b, info.upstreamApi))
                w.beginObject()
                    .field("type", "thinking")
                    .field("thinking", QString())
                    .field("signature", *carrier)
                    .endObject();
            w.beginObject()
                .field("type", "tool_use")
                // Another API's id, made valid for the next turn.
                .field("id", clientToolId(b.toolCallId, takenToolIds, toolIdSuffixes))
                .field("name", b.toolName)
                // A long argument text comes unparsed (CanonicalStreamBuilder::kMaxParsedArgumentsChars).
                .field("input", b.arguments.isEmpty() && !b.argumentsJson.isEmpty()
                                    ? wire::rj::parseToolArguments(b.argumentsJson)
                                    : b.arguments)
                .endObject();
            break;
        case BlockType::Image:
        case BlockType::Document:
            break; // Messages answers carry no images or documents
        }
    }
    w.endArray();
    writeStop(w, message.stopReason, message.stopSequence);
    w.key("usage");
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
