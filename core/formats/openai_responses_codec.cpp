#include "core/formats/openai_responses_codec.h"
#include "core/wire/tool_call_id.h"

#include "core/formats/decode_prologue.h"
#include "core/formats/openai_chat_codec.h"
#include "core/formats/openai_responses_stream_encoder.h"
#include "core/formats/unnamed_calls.h"
#include "core/model/event_accumulator.h"
#include "core/wire/document_part.h"
#include "core/wire/json.h"
#include "core/wire/json_writer.h"
#include "core/wire/rapid_json.h"
#include "core/wire/reasoning_item.h"

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

const QLatin1String kApi = wire::apiName(wire::Api::OpenAIResponses);

// Parts of a message item: input_text / output_text / refusal / input_image / input_file.
bool decodeParts(const Value *content, QList<ContentBlock> *out, const BodyPath &where, GatewayError *error) {
    if (rj::isString(content)) {
        out->append(ContentBlock::makeText(rj::toString(content)));
        return true;
    }
    if (!rj::asArray(content))
        return rejectRequest(error, where + L(": must be a string or an array of content parts"));
    qsizetype i = -1;
    for (const Value &part : content->GetArray()) {
        ++i;
        const Value *p = &part;
        const QString type = rj::toString(rj::member(p, "type"));
        if (type == L("input_text") || type == L("output_text") || type == L("text")) {
            out->append(ContentBlock::makeText(rj::toString(rj::member(p, "text"))));
        } else if (type == L("refusal")) {
            ContentBlock refusal = ContentBlock::makeText(rj::toString(rj::member(p, "refusal")));
            refusal.refusal = true;
            out->append(refusal);
        } else if (type == L("input_image")) {
            ContentBlock b;
            b.type = BlockType::Image;
            const QString url = rj::toString(rj::member(p, "image_url"));
            if (!url.isEmpty()) {
                if (!wire::splitDataUri(url, &b.mimeType, &b.data))
                    b.url = url;
            } else if (rj::isString(rj::member(p, "file_id"))) {
                b.url = rj::toString(rj::member(p, "file_id"));
            } else {
                return rejectRequest(error, BodyPath(where, i) + L(": input_image needs image_url or file_id"));
            }
            b.detail = rj::toString(rj::member(p, "detail"));
            out->append(b);
        } else if (type == L("input_file") && wire::isTranslatableDocument(part)) {
            out->append(openAIFileDocument(p));
        } else if (type.isEmpty()) {
            return rejectRequest(error, BodyPath(where, i) + L(".type: required string"));
        }
        // input_audio: in the request's json (passthrough only).
    }
    return true;
}

Message &assistantTurn(Context &ctx) {
    // Consecutive output items (reasoning, message, function_call) form one assistant turn.
    if (ctx.messages.isEmpty() || ctx.messages.last().role != Role::Assistant) {
        Message m;
        m.role = Role::Assistant;
        m.api = kApi;
        ctx.messages.append(m);
    }
    return ctx.messages.last();
}

// A reasoning item just before a call that only carries Google's signature for it
// (model::functionCallCarrier): the call's signature again, and no reasoning.
void takeCarriedCallSignature(Message &turn, ContentBlock &call) {
    if (turn.content.isEmpty() || turn.content.last().type != BlockType::Thinking)
        return;
    const ContentBlock &before = turn.content.last();
    const QString carried =
        model::carriedCallSignature({before.signatureApi, before.signature, before.redacted}, before.text);
    if (carried.isEmpty())
        return;
    call.signature = carried;
    call.signatureApi = before.signatureApi;
    turn.content.removeLast();
}

// A call whose call_id is empty or missing (a server that gave none, kept as it came, or the answer of a
// gateway that passed such calls on) gets an id from its place, and its output the id of its call: the
// conversation goes on rather than ending in this gateway's own 400 (UnnamedCalls).
QString callIdOf(const Value *item, qsizetype index, const QString &name, Context &ctx, UnnamedCalls *unnamed) {
    if (ctx.messages.isEmpty() || ctx.messages.last().role != Role::Assistant)
        unnamed->beginTurn(); // a new turn of calls
    return unnamed->callId(rj::toString(rj::member(item, "call_id")), index, 0, name);
}

bool decodeItem(const Value *item, qsizetype index, const BodyPath &where, UnnamedCalls *unnamed,
                model::ChatRequest *req, GatewayError *error) {
    Context &ctx = req->context;
    QString type = rj::toString(rj::member(item, "type"));
    if (type.isEmpty() && rj::member(item, "role"))
        type = QStringLiteral("message"); // EasyInputMessage has no type
    if (type == L("message")) {
        const QString role = rj::toString(rj::member(item, "role"));
        if (role == L("system") || role == L("developer")) {
            const QString text = rj::textOfContent(rj::member(item, "content"));
            if (!text.isEmpty())
                ctx.systemPrompt += (ctx.systemPrompt.isEmpty() ? QString() : QStringLiteral("\n\n")) + text;
            return true;
        }
        if (role == L("user")) {
            Message m;
            m.role = Role::User;
            if (!decodeParts(rj::member(item, "content"), &m.content, BodyPath(where, "content"), error))
                return false;
            ctx.messages.append(m);
            return true;
        }
        if (role == L("assistant")) {
            QList<ContentBlock> blocks;
            if (!decodeParts(rj::member(item, "content"), &blocks, BodyPath(where, "content"), error))
                return false;
            assistantTurn(ctx).content.append(blocks);
            return true;
        }
        return rejectRequest(error, where + L(".role: must be user, assistant, system or developer"));
    }
    if (type == L("function_call")) {
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.toolName = rj::toString(rj::member(item, "name"));
        if (b.toolName.isEmpty())
            return rejectRequest(error, where + L(": function_call needs a name"));
        b.toolCallId = callIdOf(item, index, b.toolName, ctx, unnamed);
        b.argumentsJson = rj::toString(rj::member(item, "arguments"));
        b.arguments = parseToolArguments(b.argumentsJson);
        b.itemId = rj::toString(rj::member(item, "id"));
        takeCarriedCallSignature(assistantTurn(ctx), b);
        assistantTurn(ctx).content.append(b);
        return true;
    }
    if (type == L("custom_tool_call")) {
        // Codex's free-form calls (apply_patch): the text is the whole input.
        ContentBlock b;
        b.type = BlockType::ToolCall;
        b.custom = true;
        b.toolName = rj::toString(rj::member(item, "name"));
        if (b.toolName.isEmpty())
            return rejectRequest(error, where + L(": custom_tool_call needs a name"));
        b.toolCallId = callIdOf(item, index, b.toolName, ctx, unnamed);
        b.arguments = QJsonObject{{L("input"), rj::toString(rj::member(item, "input"))}};
        b.argumentsJson = QString::fromUtf8(wire::compactJson(b.arguments));
        b.itemId = rj::toString(rj::member(item, "id"));
        takeCarriedCallSignature(assistantTurn(ctx), b);
        assistantTurn(ctx).content.append(b);
        return true;
    }
    if (type == L("function_call_output") || type == L("custom_tool_call_output")) {
        Message r;
        r.role = Role::ToolResult;
        r.toolCallId = rj::toString(rj::member(item, "call_id"));
        if (r.toolCallId.isEmpty()) // the output of a call named by no id: the first such call not answered
            r.toolCallId = unnamed->resultId({}).first;
        if (r.toolCallId.isEmpty())
            return rejectRequest(error, where + L(".call_id: required string"));
        const Value *output = rj::member(item, "output");
        if (rj::asArray(output)) {
            if (!decodeParts(output, &r.content, BodyPath(where, "output"), error))
                return false;
        } else {
            r.content.append(ContentBlock::makeText(rj::toString(output)));
        }
        // The latest call of that id names it: one lookup. A scan back over the history per output
        // cost N² for N outputs whose calls the history does not hold (previous_response_id keeps
        // them on the server): 99 000 held the engine 36 s (probe Z6 F1).
        r.toolName = unnamed->nameOf(r.toolCallId);
        ctx.messages.append(r);
        return true;
    }
    if (type == L("reasoning")) {
        ContentBlock b;
        b.type = BlockType::Thinking;
        QStringList summary;
        for (const Value &s : rj::elements(rj::member(item, "summary")))
            summary << rj::toString(rj::member(&s, "text"));
        b.text = summary.join(QStringLiteral("\n\n"));
        const TaggedSignature foreign = untagSignature(rj::toString(rj::member(item, "encrypted_content")));
        if (!foreign.api.isEmpty()) {
            // Reasoning another API made, carried through this client (wire::responsesReasoningItem).
            b.signature = foreign.signature;
            b.signatureApi = foreign.api;
            b.redacted = foreign.redacted;
        } else {
            // The whole item is the signature: only the Responses API can use it again. Written
            // as Qt writes the item it parsed (rj::compact), from the document where it stands.
            b.signature = QString::fromUtf8(rj::compact(*item));
            b.signatureApi = kApi;
        }
        assistantTurn(ctx).content.append(b);
        return true;
    }
    if (type.isEmpty())
        return rejectRequest(error, where + L(".type: required string"));
    return true; // item_reference, built-in tool calls: passthrough only
}

} // namespace

std::optional<model::ChatRequest> OpenAIResponsesCodec::decode(const QByteArray &body, GatewayError *error) const {
    auto begun = beginDecode(format(), body, error);
    if (!begun)
        return std::nullopt;
    model::ChatRequest req = std::move(*begun);
    const Value *o = req.json->object();

    // The ids this gateway gives a response another API answered are its request ids ("req_…",
    // server/router.cpp nextRequestId), stored nowhere: OpenAI would answer 400 "Previous
    // response with id 'req_…' not found", and no other API reads the field. Said here, in the
    // words that tell the client what to do instead.
    if (const Value *previous = rj::member(o, "previous_response_id");
        rj::isString(previous) && rj::bytes(previous).substr(0, 4) == "req_") {
        if (error) {
            *error = GatewayError::make(
                400, ErrorCategory::InvalidRequest,
                QStringLiteral("previous_response_id: the response '%1' was answered by another provider through "
                               "Switchman and is not stored anywhere, so it cannot continue a conversation; send "
                               "the full conversation as input (or store: false with the earlier items) instead")
                    .arg(rj::toString(previous).left(64)));
            error->param = QStringLiteral("previous_response_id");
            error->code = QStringLiteral("previous_response_not_found");
        }
        return std::nullopt;
    }

    const Value *instructions = rj::member(o, "instructions");
    if (rj::isString(instructions))
        req.context.systemPrompt = rj::toString(instructions);
    else if (!rj::isAbsent(instructions))
        return rejected(error, QStringLiteral("instructions: must be a string"));

    const Value *input = rj::member(o, "input");
    if (rj::isString(input)) {
        Message m;
        m.role = Role::User;
        m.content.append(ContentBlock::makeText(rj::toString(input)));
        req.context.messages.append(m);
    } else if (rj::asArray(input)) {
        const BodyPath inputPath("input");
        UnnamedCalls unnamed;
        qsizetype i = -1;
        for (const Value &item : input->GetArray()) {
            ++i;
            const BodyPath where(inputPath, i);
            if (!item.IsObject())
                return rejected(error, where + L(": must be an object"));
            if (!decodeItem(&item, i, where, &unnamed, &req, error))
                return std::nullopt;
        }
    } else if (!rj::isAbsent(input)) {
        return rejected(error, QStringLiteral("input: must be a string or an array of items"));
    }

    const Value *stream = rj::member(o, "stream");
    if (!rj::isAbsent(stream) && !stream->IsBool())
        return rejected(error, QStringLiteral("stream: must be a boolean"));
    req.stream = rj::toBool(stream, false);

    Options &opt = req.options;
    for (const char *key : {"max_output_tokens", "temperature", "top_p"}) {
        const Value *v = rj::member(o, key);
        if (!rj::isAbsent(v) && !v->IsNumber())
            return rejected(error, QString::fromLatin1(key) + L(": must be a number"));
    }
    if (const Value *v = rj::member(o, "max_output_tokens"); rj::isNumber(v))
        opt.maxTokens = int(qBound(0.0, rj::toDouble(v), 2147483647.0));
    if (const Value *v = rj::member(o, "temperature"); rj::isNumber(v))
        opt.temperature = rj::toDouble(v);
    if (const Value *v = rj::member(o, "top_p"); rj::isNumber(v))
        opt.topP = rj::toDouble(v);
    // "none" stays: a reasoning model thinks by default, and the client asked it not to.
    opt.reasoning = rj::toString(rj::member(rj::member(o, "reasoning"), "effort"));

    const Value *tools = rj::member(o, "tools");
    if (!rj::isAbsent(tools) && !tools->IsArray())
        return rejected(error, QStringLiteral("tools: must be an array"));
    qsizetype toolIndex = -1;
    for (const Value &tool : rj::elements(tools)) {
        ++toolIndex;
        const Value *t = &tool;
        const QString type = rj::toString(rj::member(t, "type"));
        if (type == L("function") || type == L("custom")) {
            const bool custom = type == L("custom");
            QString nameProblem;
            std::optional<Tool> canonical = toolDefinition(t, "parameters", /*withStrict=*/!custom, &nameProblem);
            if (!canonical)
                return rejected(error, QStringLiteral("tools[%1].name: %2").arg(toolIndex).arg(nameProblem));
            if (custom) {
                canonical->custom = true;
                canonical->format = rj::toQtObject(rj::member(t, "format"));
                canonical->parameters = customToolParameters();
            }
            req.context.tools.append(*canonical);
        } else if (type.startsWith(L("web_search"))) {
            req.context.builtinTools.append(BuiltinTool{QStringLiteral("web_search"), rj::toQtObject(t)});
        } else if (!type.isEmpty()) {
            // file_search, code_interpreter, mcp, local_shell, …: only a Responses upstream runs them.
            req.context.builtinTools.append(BuiltinTool{type, rj::toQtObject(t)});
        }
    }
    if (const Value *parallel = rj::member(o, "parallel_tool_calls"); parallel && parallel->IsBool())
        opt.parallelToolCalls = parallel->GetBool();
    const Value *format = rj::asObject(rj::member(rj::member(o, "text"), "format"));
    const QString formatType = rj::toString(rj::member(format, "type"));
    if (formatType == L("json_schema") || formatType == L("json_object")) {
        opt.outputFormat.type = formatType;
        opt.outputFormat.name = rj::toString(rj::member(format, "name"));
        opt.outputFormat.description = rj::toString(rj::member(format, "description"));
        opt.outputFormat.schema = rj::toQtObject(rj::member(format, "schema"));
        if (const Value *strict = rj::member(format, "strict"); strict && strict->IsBool())
            opt.outputFormat.strict = strict->GetBool();
    }
    const Value *choice = rj::member(o, "tool_choice");
    if (rj::isString(choice))
        opt.toolChoice = rj::toString(choice);
    else if (rj::asObject(choice) &&
             (rj::equals(rj::member(choice, "type"), "function") || rj::equals(rj::member(choice, "type"), "custom")))
        opt.toolChoice = rj::toString(rj::member(choice, "name"));
    return req;
}

std::unique_ptr<StreamEncoder> OpenAIResponsesCodec::makeStreamEncoder(const EncodeInfo &info) const {
    return std::make_unique<OpenAIResponsesStreamEncoder>(info);
}

void OpenAIResponsesCodec::writeCallSignatureCarrier(wire::JsonWriter &w, const QString &id, const QString &carrier) {
    w.beginObject()
        .field("id", id)
        .field("type", "reasoning")
        .key("summary")
        .beginArray()
        .endArray()
        .field("encrypted_content", carrier)
        .endObject();
}

void OpenAIResponsesCodec::writeUsage(wire::JsonWriter &w, const Usage &usage) {
    const qint64 input = usage.input + usage.cacheRead + usage.cacheWrite; // Responses counts cached in input
    w.beginObject()
        .field("input_tokens", input)
        .key("input_tokens_details")
        .beginObject()
        .field("cached_tokens", usage.cacheRead)
        .endObject()
        .field("output_tokens", usage.output)
        .key("output_tokens_details")
        .beginObject()
        .field("reasoning_tokens", usage.reasoning)
        .endObject()
        .field("total_tokens", input + usage.output)
        .endObject();
}

QString OpenAIResponsesCodec::errorCode(const GatewayError &error) {
    return OpenAIChatCodec::errorFields(error).code;
}

void OpenAIResponsesCodec::beginResponse(wire::JsonWriter &w, const EncodeInfo &info, QLatin1String status,
                                         const GatewayError *error, QLatin1String incompleteReason) {
    w.beginObject()
        .field("id", info.responseId)
        .field("object", "response")
        .field("created_at", info.createdSecs)
        .field("status", status)
        .key("error");
    if (error)
        w.beginObject().field("code", errorCode(*error)).field("message", error->message).endObject();
    else
        w.null();
    w.key("incomplete_details");
    if (!incompleteReason.isEmpty())
        w.beginObject().field("reason", incompleteReason).endObject();
    else
        w.null();
    w.field("model", info.model).key("output").beginArray();
}

void OpenAIResponsesCodec::endResponse(wire::JsonWriter &w, const Usage *usage, const QString *outputText) {
    w.endArray();
    if (outputText)
        w.field("output_text", *outputText);
    w.field("parallel_tool_calls", true)
        .key("text")
        .beginObject()
        .key("format")
        .beginObject()
        .field("type", "text")
        .endObject()
        .endObject()
        .field("tool_choice", "auto")
        .key("tools")
        .beginArray()
        .endArray()
        .key("usage");
    if (usage)
        writeUsage(w, *usage);
    else
        w.null();
    w.endObject();
}

std::pair<QLatin1String, QLatin1String> OpenAIResponsesCodec::statusFor(StopReason reason) {
    if (reason == StopReason::Length)
        return {L("incomplete"), L("max_output_tokens")};
    if (reason == StopReason::Refusal)
        return {L("incomplete"), L("content_filter")};
    return {L("completed"), QLatin1String()};
}

QLatin1String OpenAIResponsesCodec::lastItemStatusFor(StopReason reason) {
    return reason == StopReason::Length ? L("incomplete") : L("completed");
}

QString OpenAIResponsesCodec::customInput(const ContentBlock &call) {
    QJsonObject args = call.arguments;
    if (args.isEmpty() && !call.argumentsJson.isEmpty())
        args = parseToolArguments(call.argumentsJson);
    // A call cut short (the output cap): its carrier {"input": "…"} never closed. The text it holds
    // so far, read as pi-ai reads a partial call, not the carrier's escaped JSON.
    if (args.isEmpty() && !call.argumentsJson.isEmpty())
        args = model::parseStreamedToolArguments(call.argumentsJson);
    if (args.value(L("input")).isString())
        return args.value(L("input")).toString();
    if (args.size() == 1 && args.begin().value().isString())
        return args.begin().value().toString();
    return args.isEmpty() ? call.argumentsJson : QString::fromUtf8(wire::compactJson(args));
}

QByteArray OpenAIResponsesCodec::encodeResponse(const AssistantMessage &message, const EncodeInfo &infoIn) const {
    QString text;
    bool refused = false; // a refusal part: a completed answer, as OpenAI ends it
    for (const ContentBlock &b : message.content) {
        if (b.type == BlockType::Text && !b.refusal)
            text += b.text;
        refused |= b.type == BlockType::Text && b.refusal;
    }
    const StopReason stopReason =
        refused && message.stopReason == StopReason::Refusal ? StopReason::Stop : message.stopReason;
    // A Responses upstream's own ids pass through (a later previous_response_id names
    // something real), as they do on a streaming passthrough.
    const bool sameApi = infoIn.upstreamApi == kApi;
    const bool failed = message.stopReason == StopReason::Error || message.stopReason == StopReason::Aborted;
    if (sameApi && !failed) {
        const QJsonValue nativeOutput = message.native.value(L("output"));
        if (nativeOutput.isArray() && (!nativeOutput.toArray().isEmpty() || message.content.isEmpty())) {
            // The upstream's own response object (response.completed): every item and field as sent.
            wire::JsonWriter w(1024 + text.size() * 2);
            if (message.native.contains(L("output_text")))
                w.objectWith(message.native, {{L("model"), infoIn.model}});
            else
                w.objectWith(message.native, {{L("model"), infoIn.model}, {L("output_text"), text}});
            return w.take();
        }
    }
    EncodeInfo info = infoIn;
    if (sameApi && !message.responseId.isEmpty())
        info.responseId = message.responseId;
    auto idFor = [&](const ContentBlock &b, const QString &generated) {
        return sameApi && !b.itemId.isEmpty() ? b.itemId : generated;
    };
    wire::JsonWriter w(768 + text.size() * 2);
    if (failed) {
        const int status = message.errorStatus.value_or(500);
        const GatewayError e =
            GatewayError::make(status, GatewayError::categoryForStatus(status), message.errorMessage);
        beginResponse(w, info, L("failed"), &e);
    } else {
        const auto [status, why] = statusFor(stopReason);
        beginResponse(w, info, status, nullptr, why);
    }
    int n = 0;
    for (const ContentBlock &b : message.content) {
        const QString suffix = infoIn.responseId + QLatin1Char('_') + QString::number(n++);
        const QLatin1String itemStatus = &b == &message.content.last() ? lastItemStatusFor(stopReason) : L("completed");
        switch (b.type) {
        case BlockType::Text:
            w.beginObject()
                .field("id", idFor(b, L("msg_") + suffix))
                .field("type", "message")
                .field("status", itemStatus)
                .field("role", "assistant")
                .key("content")
                .beginArray()
                .beginObject();
            if (b.refusal)
                w.field("type", "refusal").field("refusal", b.text);
            else
                w.field("type", "output_text").field("text", b.text).key("annotations").beginArray().endArray();
            w.endObject().endArray().endObject();
            break;
        case BlockType::Thinking:
            wire::writeResponsesReasoningItem(w, b, idFor(b, L("rs_") + suffix), info.upstreamApi);
            break;
        case BlockType::ToolCall:
            if (const auto carrier = model::functionCallCarrier(b, info.upstreamApi))
                writeCallSignatureCarrier(w, L("rs_") + suffix + L("s"), *carrier);
            w.beginObject();
            if (b.custom || info.customTools.contains(b.toolName)) {
                w.field("id", idFor(b, L("ctc_") + suffix))
                    .field("type", "custom_tool_call")
                    .field("status", itemStatus)
                    .field("call_id", wire::clientToolCallId(b.toolCallId, wire::kResponsesMaxCallIdLength))
                    .field("name", b.toolName)
                    .field("input", customInput(b));
            } else {
                w.field("id", idFor(b, L("fc_") + suffix))
                    .field("type", "function_call")
                    .field("status", itemStatus)
                    .field("call_id", wire::clientToolCallId(b.toolCallId, wire::kResponsesMaxCallIdLength))
                    .field("name", b.toolName);
                if (b.argumentsJson.isEmpty())
                    w.field("arguments", QString::fromUtf8(wire::compactJson(b.arguments)));
                else
                    w.field("arguments", b.argumentsJson);
            }
            w.endObject();
            break;
        case BlockType::Image:
        case BlockType::Document:
            break; // no image or file output items for a chat answer
        }
    }
    endResponse(w, &message.usage, &text);
    return w.take();
}

QByteArray OpenAIResponsesCodec::encodeError(const GatewayError &error) const {
    wire::JsonWriter w(128 + error.message.size());
    OpenAIChatCodec::writeError(w, error);
    return w.take();
}

} // namespace sw::formats
