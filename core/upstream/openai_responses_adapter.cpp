#include "core/upstream/openai_responses_adapter.h"

#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/openai_responses_stream_decoder.h"
#include "core/upstream/openai_schema.h"
#include "core/upstream/tool_names.h"
#include "core/wire/client_body.h"
#include "core/wire/dropped_members.h"
#include "core/wire/json.h"
#include "core/wire/json_splice.h"
#include "core/wire/reasoning_item.h"
#include "core/wire/tool_id_pairing.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QVarLengthArray>
#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

namespace sw::upstream {

using namespace sw::model;

namespace {

constexpr int kMinOutputTokens = 16;
constexpr qsizetype kMaxCallIdLength = wire::kResponsesMaxCallIdLength;

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

void addHeader(HttpRequest &http, const QByteArray &name, const QByteArray &value) {
    http.headers.append(qMakePair(name, value));
}

// A file as an `input_file`: inline data as a data: URI with its file name, an OpenAI file id,
// or a URL OpenAI fetches. Another provider's file id never gets here
// (UpstreamAdapter::incompatibility).
QJsonObject inputFile(const ContentBlock &b) {
    QJsonObject file{{L("type"), L("input_file")}};
    if (!b.data.isEmpty()) {
        file.insert(L("file_data"), wire::makeDataUri(b.mimeType, b.data));
        file.insert(L("filename"), documentFileName(b));
    } else if (b.url.startsWith(L("file-"))) {
        file.insert(L("file_id"), b.url);
    } else {
        file.insert(L("file_url"), b.url);
    }
    return file;
}

// User turn parts; an image given by a non-OpenAI file id cannot be resolved and is left out.
QJsonArray userParts(const QList<ContentBlock> &blocks) {
    QJsonArray parts;
    for (const ContentBlock &b : blocks) {
        if (b.type == BlockType::Text) {
            parts.append(QJsonObject{{L("type"), L("input_text")}, {L("text"), b.text}});
        } else if (b.isTextDocument()) {
            parts.append(QJsonObject{{L("type"), L("input_text")}, {L("text"), textDocumentAsText(b)}});
        } else if (b.type == BlockType::Document) {
            parts.append(inputFile(b));
        } else if (b.type == BlockType::Image) {
            // The client's detail (resolution) choice, else the API's default.
            const QString detail = b.detail.isEmpty() ? QStringLiteral("auto") : b.detail;
            if (b.url.startsWith(L("file-")))
                parts.append(QJsonObject{{L("type"), L("input_image")}, {L("file_id"), b.url}, {L("detail"), detail}});
            else if (b.url.isEmpty() || b.url.startsWith(L("http")) || b.url.startsWith(L("data:")))
                parts.append(
                    QJsonObject{{L("type"), L("input_image")},
                                {L("image_url"), b.url.isEmpty() ? wire::makeDataUri(b.mimeType, b.data) : b.url},
                                {L("detail"), detail}});
        }
    }
    return parts;
}

// An output item id the gateway wrote for an answer another API gave (the Responses encoders:
// "<kind>_" + the request id "req_…" + "_<n>"). OpenAI's own ids are hexadecimal after the kind.
bool gatewayMadeItemId(std::string_view id) {
    for (const std::string_view kind : {"msg_req_", "fc_req_", "ctc_req_", "rs_req_"})
        if (id.substr(0, kind.size()) == kind)
            return true;
    return false;
}

// Whether a Responses client's own body asks for a summary of the reasoning (reasoning.summary).
bool clientAsksForSummary(const model::ChatRequest &request) {
    return wire::rj::member(wire::rj::member(wire::clientBody(request), "reasoning"), "summary") != nullptr;
}

// OpenAI's own id of the output item a block came from: a call's "fc_…" (pi keeps it after a bar
// in the tool call id), a text's "msg_…".
std::optional<QString> itemIdOf(const ContentBlock &b) {
    if (b.type == BlockType::ToolCall) {
        const QString id = b.toolCallId.section(QLatin1Char('|'), 1, 1);
        if (id.startsWith(QLatin1String("fc_")))
            return id;
    } else if (b.type == BlockType::Text && b.itemId.startsWith(QLatin1String("msg_"))) {
        return b.itemId;
    }
    return std::nullopt;
}

// Each call_id once in the conversation, and each output under the call_id of the call it answers
// (wire::ToolIdPairing), as for Chat: DeepSeek, GLM and Kimi give two calls of one answer one id, and
// OpenAI refuses a repeated call_id (probe JV M4). A calling turn begins at a call that follows an
// output or a message of the client's side (user, system, developer): the items of one answer
// (reasoning, text, calls) are one turn. For a conversation whose ids repeat (wire::sortedIdsRepeat
// first); an item whose call_id is empty (a server that names its calls by none) or no string stays
// as it is.
void uniqueCallIds(QJsonArray &input) {
    wire::ToolIdPairing ids(kMaxCallIdLength);
    bool afterInput = true;
    for (qsizetype i = 0; i < input.size(); ++i) {
        QJsonObject item = input.at(i).toObject();
        const QString type = item.value(L("type")).toString();
        const bool call = type == L("function_call") || type == L("custom_tool_call");
        const bool output = type == L("function_call_output") || type == L("custom_tool_call_output");
        if (!call && !output) {
            if (const QString role = item.value(L("role")).toString(); !role.isEmpty() && role != L("assistant"))
                afterInput = true;
            continue;
        }
        if (call && std::exchange(afterInput, false))
            ids.beginCallingTurn();
        afterInput |= output;
        const QString id = item.value(L("call_id")).toString();
        if (id.isEmpty())
            continue;
        const QString sent = call ? ids.call(id) : ids.result(id);
        if (sent == id)
            continue;
        item.insert(L("call_id"), sent);
        input.replace(i, item);
    }
}

} // namespace

QJsonObject OpenAIResponsesAdapter::buildBody(const model::ChatRequest &request, const QString &modelId,
                                              bool reasonsAlways) {
    const Context &ctx = request.context;
    const Options &opt = request.options;
    QJsonArray input;
    QVarLengthArray<QString, 16> callIds; // as sent: a repeat is made unique below
    int n = 0;
    // As for Chat: a run of tool outputs first, then its images and files as one user turn.
    QList<ContentBlock> resultAttachments;
    const auto flushResultAttachments = [&] {
        if (const auto blocks = takeToolResultAttachments(resultAttachments); !blocks.isEmpty())
            input.append(QJsonObject{{L("role"), L("user")}, {L("content"), userParts(blocks)}});
    };
    for (const Message &m : ctx.messages) {
        if (m.role != Role::ToolResult)
            flushResultAttachments();
        switch (m.role) {
        case Role::User: {
            const QJsonArray parts = userParts(m.content);
            if (!parts.isEmpty())
                input.append(QJsonObject{{L("role"), L("user")}, {L("content"), parts}});
            break;
        }
        case Role::Assistant: {
            QString text;
            QString textItemId;         // the message item's own id (msg_…), when a reasoning item led to it
            bool reasoningSent = false; // this turn's calls keep their fc_ ids only beside their reasoning
            auto flushText = [&] {
                if (!text.isEmpty() && textItemId.isEmpty())
                    input.append(QJsonObject{{L("role"), L("assistant")}, {L("content"), text}});
                else if (!text.isEmpty()) // a message item under its id, beside its reasoning
                    input.append(
                        QJsonObject{{L("type"), L("message")},
                                    {L("id"), textItemId},
                                    {L("role"), L("assistant")},
                                    {L("status"), L("completed")},
                                    {L("content"), QJsonArray{QJsonObject{{L("type"), L("output_text")},
                                                                          {L("text"), text},
                                                                          {L("annotations"), QJsonArray()}}}}});
                text.clear();
                textItemId.clear();
            };
            for (qsizetype i = 0; i < m.content.size(); ++i) {
                const ContentBlock &b = m.content[i];
                if (b.type == BlockType::Text) {
                    if (b.text.isEmpty())
                        continue;
                    // After a reasoning item, text goes as a message item with an id: its own, or one
                    // made up as pi-ai does (OpenAI keeps nothing with store: false). Two parts of
                    // one message item arrive as two blocks under one id: one item.
                    const auto id = itemIdOf(b);
                    if (reasoningSent && (textItemId.isEmpty() || (id && *id != textItemId))) {
                        flushText();
                        textItemId = id.value_or(QStringLiteral("msg_%1").arg(n++));
                    }
                    text += b.text;
                } else if (b.type == BlockType::Thinking) {
                    // A reasoning item goes back only to the API that produced it; other
                    // APIs' thinking is dropped, never replayed as text (translation_rules.md).
                    // A later call keeps its fc_ id only beside the reasoning just before it.
                    reasoningSent = false;
                    if (signatureOwner(m, b) != wire::apiName(kApi) || !b.signature.startsWith(QLatin1Char('{')))
                        continue;
                    // OpenAI refuses a reasoning item with an id unless the item right after it is
                    // one it led to ("provided without its required following item"), paired by id:
                    // a message (whose id can be made up) or a call under its own fc_ id.
                    const ContentBlock *next = nullptr; // the first block that will be sent after it
                    for (qsizetype j = i + 1; j < m.content.size() && !next; ++j)
                        if (const ContentBlock &c = m.content[j];
                            c.type == BlockType::ToolCall || (c.type == BlockType::Text && !c.text.isEmpty()))
                            next = &c;
                    if (!next)
                        continue;
                    QJsonObject item = wire::responsesReasoningItem(b, QStringLiteral("rs_%1").arg(n++));
                    flushText();
                    if (next->type == BlockType::ToolCall && !itemIdOf(*next)) {
                        // A client that kept the call but not its item id (Anthropic's tool_use ids
                        // cannot hold one): no id on either side, as Codex sends every step with
                        // store: false. The reasoning is read from its encrypted content, the call
                        // paired with its output by call_id. Left out, the model lost its reasoning
                        // at every tool step (probe T1-1). Without encrypted content such an item
                        // says nothing OpenAI can read: left out.
                        if (!item.contains(L("encrypted_content")))
                            continue;
                        item.remove(L("id"));
                        input.append(item);
                        continue;
                    }
                    input.append(item);
                    reasoningSent = true;
                } else if (b.type == BlockType::ToolCall) {
                    flushText();
                    const QString callId = boundedToolCallId(b.toolCallId, kMaxCallIdLength);
                    callIds.append(callId);
                    const QString args = b.arguments.isEmpty() && !b.argumentsJson.isEmpty()
                                             ? b.argumentsJson
                                             : QString::fromUtf8(wire::compactJson(b.arguments));
                    QJsonObject call{{L("type"), L("function_call")},
                                     {L("call_id"), callId},
                                     {L("name"), b.toolName},
                                     {L("arguments"), args}};
                    // The item id after the bar is OpenAI's own (fc_…): a replayed reasoning item
                    // must be followed by the very item it led to, so the call keeps it. Without
                    // its reasoning, the id is refused too ("provided without its required
                    // 'reasoning' item"): the call_id alone pairs the call with its output.
                    if (const auto id = itemIdOf(b); id && reasoningSent)
                        call.insert(L("id"), *id);
                    input.append(call);
                }
            }
            flushText();
            break;
        }
        case Role::ToolResult: {
            const ToolResultContent result = splitToolResult(m);
            input.append(QJsonObject{
                {L("type"), L("function_call_output")},
                {L("call_id"), boundedToolCallId(m.toolCallId, kMaxCallIdLength)},
                {L("output"), m.isError ? OpenAICompletionsAdapter::toolErrorText(result.text) : result.text}});
            resultAttachments.append(result.attachments);
            break;
        }
        }
    }
    flushResultAttachments();
    if (wire::sortedIdsRepeat(callIds))
        uniqueCallIds(input);
    QJsonObject body{{L("model"), modelId}, {L("input"), input}, {L("stream"), true}, {L("store"), false}};
    if (!ctx.systemPrompt.isEmpty())
        body.insert(L("instructions"), ctx.systemPrompt);
    if (opt.maxTokens) // the API's minimum is 16: a smaller value is refused, not honoured
        body.insert(L("max_output_tokens"), std::max(*opt.maxTokens, kMinOutputTokens));
    const QString effort = model::openAIEffort(opt, modelId);
    if (!effort.isEmpty() && effort != L("none")) {
        body.insert(L("reasoning"), QJsonObject{{L("effort"), effort}, {L("summary"), L("auto")}});
        // store:false: the reasoning must travel back encrypted for the next turn.
        body.insert(L("include"), QJsonArray{L("reasoning.encrypted_content")});
    } else {
        if (effort == L("none")) // asked off: a reasoning model would think at its default effort
            body.insert(L("reasoning"), QJsonObject{{L("effort"), effort}});
        // A model that always reasons refuses sampling even so ("Unsupported parameter:
        // 'temperature' is not supported with this model."): it goes without, named (droppedFor).
        if (opt.temperature && !reasonsAlways)
            body.insert(L("temperature"), *opt.temperature);
        if (opt.topP && !reasonsAlways)
            body.insert(L("top_p"), *opt.topP);
    }
    if (!ctx.tools.isEmpty() || !ctx.builtinTools.isEmpty()) {
        QJsonArray tools;
        for (const Tool &t : ctx.tools) {
            const QJsonObject parameters = t.parameters.isEmpty()
                                               ? QJsonObject{{L("type"), L("object")}, {L("properties"), QJsonObject()}}
                                               : t.parameters;
            // Responses defaults to strict; only a client that asked for it gets it, for a schema strict
            // mode takes (openai_schema.h: another API's strict schema may hold optional properties).
            QJsonObject tool{
                {L("type"), L("function")},
                {L("name"), t.name},
                {L("parameters"), parameters},
                {L("strict"), openai_schema::strict(t.strict.value_or(false), parameters, request.sourceApi)}};
            const QString description = t.custom ? customToolDescription(t) : t.description;
            if (!description.isEmpty())
                tool.insert(L("description"), description);
            tools.append(tool);
        }
        std::optional<int> searches; // Messages' max_uses: web search is the one built-in tool that gets here
        for (const BuiltinTool &b : ctx.builtinTools)
            if (b.kind == L("web_search")) {
                QJsonObject search{{L("type"), L("web_search")}};
                const QJsonValue domains = b.config.value(L("allowed_domains"));
                if (domains.isArray())
                    search.insert(L("filters"), QJsonObject{{L("allowed_domains"), domains}});
                if (const QJsonValue size = b.config.value(L("search_context_size")); size.isString())
                    search.insert(L("search_context_size"), size); // Chat's web_search_options
                if (const QJsonValue uses = b.config.value(L("max_uses")); uses.isDouble())
                    searches = std::min(searches.value_or(uses.toInt()), uses.toInt());
                QJsonObject location = b.config.value(L("user_location")).toObject();
                if (location.value(L("approximate")).isObject()) // Chat's web_search_options nest it
                    location = location.value(L("approximate")).toObject();
                if (!location.isEmpty()) {
                    location.insert(L("type"), L("approximate"));
                    search.insert(L("user_location"), location);
                }
                tools.append(search);
            }
        body.insert(L("tools"), tools);
        if (searches)
            body.insert(L("max_tool_calls"), *searches);
        if (opt.parallelToolCalls == false)
            body.insert(L("parallel_tool_calls"), false);
        if (opt.toolChoice == L("auto") || opt.toolChoice == L("none") || opt.toolChoice == L("required"))
            body.insert(L("tool_choice"), opt.toolChoice);
        else if (!opt.toolChoice.isEmpty())
            body.insert(L("tool_choice"), QJsonObject{{L("type"), L("function")}, {L("name"), opt.toolChoice}});
    }
    QJsonObject text;
    if (opt.outputFormat.isSet()) {
        // Chat's response_format, one to one as text.format.
        QJsonObject format{{L("type"), opt.outputFormat.type}};
        if (opt.outputFormat.type == L("json_schema")) {
            format.insert(L("name"),
                          opt.outputFormat.name.isEmpty() ? QStringLiteral("response") : opt.outputFormat.name);
            format.insert(L("schema"), opt.outputFormat.schema);
            if (!opt.outputFormat.description.isEmpty())
                format.insert(L("description"), opt.outputFormat.description);
            if (opt.outputFormat.strict) // as for a tool
                format.insert(L("strict"), openai_schema::strict(*opt.outputFormat.strict, opt.outputFormat.schema,
                                                                 request.sourceApi));
        }
        text.insert(L("format"), format);
    }
    // Chat's verbosity is text.verbosity here, the same setting.
    if (request.sourceApi == wire::Api::OpenAICompletions)
        if (const QString verbosity = wire::verbosityOf(wire::clientBody(request), request.sourceApi);
            !verbosity.isEmpty())
            text.insert(L("verbosity"), verbosity);
    if (!text.isEmpty())
        body.insert(L("text"), text);
    // Stop sequences have no Responses field: they are dropped (formats/translation_rules.md).
    // The prompt cache's routing key: a Chat client's own (the same field), or a pi session's, as
    // pi-ai sends it unless told not to cache. Requests of one key land where their prefix is cached.
    namespace rj = wire::rj;
    const rj::Value *client = wire::clientBody(request);
    const rj::Value *key = nullptr;
    if (request.sourceApi == wire::Api::OpenAICompletions)
        key = rj::member(client, "prompt_cache_key");
    else if (request.sourceApi == wire::Api::Pi &&
             !rj::equals(rj::member(rj::member(client, "options"), "cacheRetention"), "none"))
        key = rj::member(rj::member(client, "options"), "sessionId");
    if (rj::isString(key) && key->GetStringLength() > 0 && key->GetStringLength() <= 256)
        body.insert(L("prompt_cache_key"), rj::toString(key));
    // How long a Chat client asked its prefix be cached ("in-memory", "24h"): the same field here.
    if (const rj::Value *retention = rj::member(client, "prompt_cache_retention");
        request.sourceApi == wire::Api::OpenAICompletions && rj::isString(retention) &&
        retention->GetStringLength() > 0 && retention->GetStringLength() <= 32)
        body.insert(L("prompt_cache_retention"), rj::toString(retention));
    return body;
}

HttpRequest OpenAIResponsesAdapter::buildRequest(const model::ChatRequest &request, const Target &target,
                                                 const HeaderList &forwardHeaders) const {
    const bool passthrough = request.sourceApi == kApi;
    HttpRequest http;
    http.url = joinUrl(target.baseUrl, QStringLiteral("/responses"));
    if (passthrough) {
        // Everything the client sent, unknown fields included, except reasoning items another
        // API made (tagged encrypted_content, after a failover), and the item ids the gateway
        // made up for another API's answer (msg_req_…, fc_req_…): no OpenAI server stored them,
        // and OpenAI refuses an input item id it does not know. An item without its id is still
        // valid input; the ids OpenAI made stay, to pair its reasoning with what followed.
        namespace rj = wire::rj;
        const rj::Value *input = rj::member(wire::clientBody(request), "input");
        // After this upstream refused an encrypted reasoning item (another provider's), none goes,
        // nor any item id: OpenAI refuses an item id whose reasoning item is missing.
        const bool replay = target.replayReasoning;
        // A reasoning item the gateway named (rs_req_…) is another API's, tagged or not: an SDK that
        // kept its snapshot of an incomplete response sends it back without encrypted_content.
        const auto foreign = [replay](const rj::Value &item) {
            return rj::equals(rj::member(&item, "type"), "reasoning") &&
                   (!replay || gatewayMadeItemId(rj::bytes(rj::member(&item, "id"))) ||
                    !untagSignature(rj::toString(rj::member(&item, "encrypted_content"))).api.isEmpty());
        };
        const auto madeHere = [replay](const rj::Value &item) {
            if (!replay)
                return rj::isString(rj::member(&item, "id")) &&
                       !rj::equals(rj::member(&item, "type"), "item_reference");
            return gatewayMadeItemId(rj::bytes(rj::member(&item, "id")));
        };
        // A call_id over 64 (a server of the same API named the call so) is refused by OpenAI: the
        // call's and its output's go bounded alike (wire::boundedToolCallId), so they still pair.
        const auto longCallId = [](const rj::Value &item) {
            return rj::bytes(rj::member(&item, "call_id")).size() > kMaxCallIdLength;
        };
        const auto items = rj::elements(input);
        const bool rewrites = std::any_of(items.begin(), items.end(), [&](const rj::Value &item) {
            return foreign(item) || madeHere(item) || longCallId(item);
        });
        // Two calls under one call_id (a client told so by DeepSeek, GLM or Kimi behind a Responses
        // shim, or before the gateway made them unique), which OpenAI refuses: each made unique, each
        // output under its call's (uniqueCallIds). The ids are looked at first; only a repeat pays.
        const bool repeatsIds = [&items] {
            QVarLengthArray<std::string_view, 32> ids;
            for (const rj::Value &item : items)
                if (const rj::Value *type = rj::member(&item, "type");
                    rj::equals(type, "function_call") || rj::equals(type, "custom_tool_call"))
                    if (const std::string_view id = rj::bytes(rj::member(&item, "call_id")); !id.empty())
                        ids.push_back(id);
            return wire::sortedIdsRepeat(ids);
        }();
        // A model that always reasons refuses the client's sampling: it goes without (droppedFor).
        QList<QLatin1String> refused;
        if (OpenAICompletionsAdapter::alwaysReasons(target))
            for (const char *key : {"temperature", "top_p"})
                if (rj::member(wire::clientBody(request), key))
                    refused.append(QLatin1String(key));
        // A server that refused a reasoning summary (Target::reasoningSummary) gets the client's
        // reasoning settings without one (droppedFor names it).
        const bool withoutSummary = !target.reasoningSummary && clientAsksForSummary(request);
        // The client's effort as this model takes it (a body written for gpt-5.2's xhigh reaching
        // gpt-5.1 after a failover): named in the answer (droppedFor).
        const QString clientEffort =
            rj::toString(rj::member(rj::member(wire::clientBody(request), "reasoning"), "effort"));
        const QString effort = model::openAIEffortFor(clientEffort, target.modelId);
        // Nothing to change (the usual case): the client's bytes as they are, with model and stream
        // set, max_output_tokens lowered when the model takes fewer (Target::maxOutputTokens), and
        // only the effort changed in the client's reasoning object.
        const std::optional<int> cap = loweredOutputCap(request, target);
        std::optional<QByteArray> spliced;
        if (!rewrites && !repeatsIds && refused.isEmpty() && !withoutSummary) {
            const QByteArray model = wire::jsonString(target.modelId);
            const QByteArray capText = cap ? QByteArray::number(*cap) : QByteArray();
            QVarLengthArray<wire::JsonMemberEdit, 4> edits{{"model", model}, {"stream", "true"}};
            if (cap)
                edits.append({"max_output_tokens", capText});
            // The client's reasoning object with its effort replaced, in its own bytes too.
            std::optional<QByteArray> reasoning;
            if (effort != clientEffort) {
                const auto members = wire::JsonObjectSpans::scan(request.rawBody);
                const wire::JsonMemberSpan *sent = members ? members->find("reasoning") : nullptr;
                const QByteArray effortText = wire::jsonString(effort);
                if (sent)
                    reasoning = wire::spliceTopLevel(members->value(*sent), {{"effort", effortText}});
                if (reasoning)
                    edits.append({"reasoning", *reasoning});
            }
            if (effort == clientEffort || reasoning)
                spliced = wire::spliceTopLevel(request.rawBody, std::span(edits.data(), edits.size()));
        }
        if (spliced) {
            http.body = std::move(*spliced);
        } else {
            QJsonObject body = wire::clientBodyQt(request);
            body.insert(L("model"), target.modelId);
            body.insert(L("stream"), true);
            if (cap)
                body.insert(L("max_output_tokens"), *cap);
            for (const QLatin1String key : std::as_const(refused))
                body.remove(key);
            if (withoutSummary || effort != clientEffort) {
                QJsonObject reasoning = body.value(L("reasoning")).toObject();
                if (withoutSummary)
                    reasoning.remove(L("summary"));
                if (effort != clientEffort)
                    reasoning.insert(L("effort"), effort);
                body.insert(L("reasoning"), reasoning);
            }
            if (rewrites) {
                // The same items in Qt's JSON, one for one.
                const QJsonArray sent = body.value(L("input")).toArray();
                QJsonArray kept;
                qsizetype i = 0;
                for (const rj::Value &item : items) {
                    if (!foreign(item)) {
                        QJsonValue out = sent.at(i);
                        if (madeHere(item) || longCallId(item)) {
                            QJsonObject o = out.toObject();
                            if (madeHere(item))
                                o.remove(L("id"));
                            if (longCallId(item))
                                o.insert(L("call_id"),
                                         boundedToolCallId(o.value(L("call_id")).toString(), kMaxCallIdLength));
                            out = o;
                        }
                        kept.append(out);
                    }
                    ++i;
                }
                body.insert(L("input"), kept);
            }
            if (repeatsIds) {
                QJsonArray kept = body.value(L("input")).toArray();
                uniqueCallIds(kept);
                body.insert(L("input"), kept);
            }
            http.body = wire::compactJson(body);
        }
    } else {
        // Tool names OpenAI refuses go by an alias; the answer's calls come back by the client's.
        const ToolNameAliases aliases = ToolNameAliases::forRequest(request, kApi);
        std::optional<model::ChatRequest> aliased;
        const model::ChatRequest &converted = withToolAliases(request, aliases, aliased);
        http.toolNameOriginals = aliases.originals();
        // A model configured not to reason gets no `reasoning` (gpt-4.1 refuses reasoning.effort).
        // One that takes fewer output tokens than asked gets its maximum.
        model::ChatRequest scratch;
        QJsonObject body = buildBody(requestForTarget(converted, target, scratch), target.modelId,
                                     OpenAICompletionsAdapter::alwaysReasons(target));
        if (!target.replayReasoning) {
            // As above: no reasoning item, and no item id that would ask for one.
            QJsonArray kept;
            for (const QJsonValue &v : body.value(L("input")).toArray()) {
                QJsonObject item = v.toObject();
                if (item.value(L("type")).toString() == L("reasoning"))
                    continue;
                item.remove(L("id"));
                kept.append(item);
            }
            body.insert(L("input"), kept);
        }
        if (!target.reasoningSummary && body.contains(L("reasoning"))) {
            QJsonObject reasoning = body.value(L("reasoning")).toObject();
            reasoning.remove(L("summary"));
            body.insert(L("reasoning"), reasoning);
        }
        http.body = wire::compactJson(body);
    }
    addHeader(http, "content-type", "application/json");
    addHeader(http, "accept", "text/event-stream");
    if (!target.credential.isEmpty())
        addHeader(http, "authorization", "Bearer " + target.credential);
    if (passthrough) {
        const QByteArray beta = headerValue(forwardHeaders, "openai-beta");
        if (!beta.isEmpty())
            addHeader(http, "OpenAI-Beta", beta);
    }
    return http;
}

QStringList OpenAIResponsesAdapter::droppedFor(const model::ChatRequest &request, const Target &target) const {
    QStringList out;
    const bool reasonsAlways = OpenAICompletionsAdapter::alwaysReasons(target);
    if (request.sourceApi != kApi) {
        // Converted with reasoning on (buildBody), or to a model that always reasons: OpenAI's
        // reasoning models take only the default sampling.
        const QString effort = target.modelReasons ? model::openAIEffort(request.options, target.modelId) : QString();
        if (reasonsAlways || (!effort.isEmpty() && effort != QLatin1String("none")))
            out = OpenAICompletionsAdapter::samplingMembers(request);
    } else {
        if (reasonsAlways) // the client's own members, as the passthrough leaves them out
            for (const char *key : {"temperature", "top_p"})
                if (wire::rj::member(wire::clientBody(request), key))
                    out << QLatin1String(key);
        // The client's own summary, after the server refused one (Target::reasoningSummary).
        if (!target.reasoningSummary && clientAsksForSummary(request))
            out << QStringLiteral("reasoning.summary");
    }
    // The client's effort, where this model takes another.
    if (const QString effort = effortChanged(request, target, kApi); !effort.isEmpty())
        out << effort;
    return out;
}

QString OpenAIResponsesAdapter::effortChanged(const model::ChatRequest &request, const Target &target,
                                              wire::Api upstream) {
    namespace rj = wire::rj;
    const rj::Value *body = wire::clientBody(request);
    // Same API: the member the passthrough changes in the client's bytes.
    if (request.sourceApi == upstream) {
        const char *name = upstream == kApi ? "reasoning.effort" : "reasoning_effort";
        const rj::Value *effort =
            upstream == kApi ? rj::member(rj::member(body, "reasoning"), "effort") : rj::member(body, name);
        const QString asked = rj::toString(effort);
        return model::openAIEffortFor(asked, target.modelId) != asked ? QLatin1String(name) : QString();
    }
    // Converted: the effort the client asked for, or its thinking budget's (model::openAIEffort), as
    // the model takes it; a model configured not to reason is asked no effort at all.
    const Options &opt = request.options;
    if (!target.modelReasons || (opt.reasoning.isEmpty() && !opt.thinkingBudget))
        return {};
    const QString asked = opt.reasoning.isEmpty() ? model::effortForThinkingBudget(*opt.thinkingBudget) : opt.reasoning;
    if (model::openAIEffort(opt, target.modelId) == asked)
        return {};
    switch (request.sourceApi) {
    case wire::Api::OpenAICompletions: // reasoning_effort, else OpenRouter's reasoning object
        return rj::member(body, "reasoning_effort") ? QStringLiteral("reasoning_effort") : QStringLiteral("reasoning");
    case wire::Api::AnthropicMessages:
        return opt.reasoning.isEmpty() ? QStringLiteral("thinking.budget_tokens")
                                       : QStringLiteral("output_config.effort");
    case wire::Api::Pi:
        return QStringLiteral("options.reasoning");
    default:
        return QStringLiteral("reasoning.effort");
    }
}

std::unique_ptr<StreamDecoder> OpenAIResponsesAdapter::makeDecoder(const Target &, NativeBody native) const {
    return std::make_unique<OpenAIResponsesStreamDecoder>(native);
}

UpstreamErrorInfo OpenAIResponsesAdapter::parseError(int, const QByteArray &body) const {
    return wire::parseErrorBody(kApi, body);
}

} // namespace sw::upstream
