#include "core/upstream/anthropic_adapter.h"

#include "core/upstream/anthropic_schema.h"

#include "core/upstream/anthropic_stream_decoder.h"
#include "core/upstream/claude_models.h"
#include "core/upstream/openai_completions_adapter.h"
#include "core/upstream/tool_names.h"
#include "core/wire/client_body.h"
#include "core/wire/json.h"
#include "core/wire/json_splice.h"
#include "core/wire/tool_id_pairing.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

namespace sw::upstream {

using namespace sw::model;

namespace {

// max_tokens is required by Messages: a converted request that names none gets this.
constexpr int kDefaultMaxTokens = 8192;

QLatin1String L(const char *s) {
    return QLatin1String(s);
}

QJsonObject imageJson(const ContentBlock &b) {
    if (b.url.startsWith(L("file_"))) // an Anthropic Files API id
        return QJsonObject{{L("type"), L("image")},
                           {L("source"), QJsonObject{{L("type"), L("file")}, {L("file_id"), b.url}}}};
    if (!b.url.isEmpty())
        return QJsonObject{{L("type"), L("image")},
                           {L("source"), QJsonObject{{L("type"), L("url")}, {L("url"), b.url}}}};
    return QJsonObject{{L("type"), L("image")},
                       {L("source"), QJsonObject{{L("type"), L("base64")},
                                                 {L("media_type"), b.mimeType},
                                                 {L("data"), QString::fromLatin1(b.data)}}}};
}

// A PDF by base64, URL or Anthropic file id, or plain text: Messages' four document sources.
// Another provider's file id or a type Messages cannot read never gets here
// (UpstreamAdapter::incompatibility).
QJsonObject documentJson(const ContentBlock &b) {
    QJsonObject source;
    if (b.isTextDocument())
        source = {{L("type"), L("text")}, {L("media_type"), L("text/plain")}, {L("data"), b.text}};
    else if (!b.data.isEmpty())
        source = {{L("type"), L("base64")}, {L("media_type"), b.mimeType}, {L("data"), QString::fromLatin1(b.data)}};
    else if (b.url.startsWith(L("file_")))
        source = {{L("type"), L("file")}, {L("file_id"), b.url}};
    else
        source = {{L("type"), L("url")}, {L("url"), b.url}};
    QJsonObject document{{L("type"), L("document")}, {L("source"), source}};
    if (!b.title.isEmpty())
        document.insert(L("title"), b.title);
    return document;
}

QJsonArray userContent(const QList<ContentBlock> &blocks) {
    QJsonArray out;
    for (const ContentBlock &b : blocks) {
        // Messages refuses a text block of whitespace alone, in a user turn or a tool result
        // ("text content blocks must contain non-whitespace text"): a shell tool that printed
        // only a newline. A result left empty is an empty result (UpstreamAdapter::incompatibility
        // keeps a last user turn of whitespace alone from this upstream).
        if (b.type == BlockType::Text && !AnthropicAdapter::isBlank(b.text))
            out.append(QJsonObject{{L("type"), L("text")}, {L("text"), b.text}});
        else if (b.type == BlockType::Image)
            out.append(imageJson(b));
        else if (b.type == BlockType::Document)
            out.append(documentJson(b));
    }
    return out;
}

// Assistant turn; see formats/translation_rules.md for the thinking rule.
QJsonArray assistantContent(const Message &m) {
    QJsonArray out;
    for (const ContentBlock &b : m.content) {
        switch (b.type) {
        case BlockType::Text:
            // Messages refuses a text block of whitespace alone ("text content blocks must contain
            // non-whitespace text"): the "\n\n" another model wrote before its tool call.
            if (!AnthropicAdapter::isBlank(b.text))
                out.append(QJsonObject{{L("type"), L("text")}, {L("text"), b.text}});
            break;
        case BlockType::Thinking:
            // Only reasoning Anthropic signed goes back; any other is dropped, never
            // replayed as text (it would break the thinking-before-tool_use rule).
            if (signatureOwner(m, b) != wire::apiName(AnthropicAdapter::kApi) || b.signature.isEmpty())
                break;
            if (b.redacted)
                out.append(QJsonObject{{L("type"), L("redacted_thinking")}, {L("data"), b.signature}});
            else
                out.append(
                    QJsonObject{{L("type"), L("thinking")}, {L("thinking"), b.text}, {L("signature"), b.signature}});
            break;
        case BlockType::ToolCall:
            out.append(QJsonObject{{L("type"), L("tool_use")},
                                   {L("id"), AnthropicAdapter::toolCallId(b.toolCallId)},
                                   {L("name"), b.toolName},
                                   {L("input"), b.arguments}});
            break;
        case BlockType::Image:
        case BlockType::Document:
            break; // assistants cannot send images or documents to Messages
        }
    }
    return out;
}

// A Responses `web_search` (or Anthropic's own) as Messages' server tool; the domain
// filter and the approximate location have the same meaning on both.
QJsonObject webSearchTool(const QJsonObject &config) {
    QJsonObject tool{{L("type"), L("web_search_20250305")}, {L("name"), L("web_search")}};
    QJsonValue domains = config.value(L("filters")).toObject().value(L("allowed_domains"));
    if (!domains.isArray())
        domains = config.value(L("allowed_domains"));
    if (domains.isArray() && !domains.toArray().isEmpty())
        tool.insert(L("allowed_domains"), domains);
    if (config.value(L("blocked_domains")).isArray())
        tool.insert(L("blocked_domains"), config.value(L("blocked_domains")));
    QJsonObject location = config.value(L("user_location")).toObject();
    if (location.value(L("approximate")).isObject()) // Chat's web_search_options nest it
        location = location.value(L("approximate")).toObject();
    if (!location.isEmpty()) {
        location.insert(L("type"), L("approximate"));
        tool.insert(L("user_location"), location);
    }
    if (config.value(L("max_uses")).isDouble())
        tool.insert(L("max_uses"), config.value(L("max_uses")));
    return tool;
}

void addHeader(HttpRequest &http, const QByteArray &name, const QByteArray &value) {
    http.headers.append(qMakePair(name, value));
}

// A pi client asks for prompt caching (options.cacheRetention, "short" unless it says "none"), as
// pi-ai does talking to Anthropic itself: without it every turn of an agent loop converted for
// Messages paid the whole prompt at the full input price (probe A2 4). "long" goes as the 5-minute
// cache: its 1-hour TTL takes a beta a converted request does not send.
bool wantsPromptCache(const model::ChatRequest &request) {
    if (request.sourceApi != wire::Api::Pi)
        return false;
    const wire::rj::Value *retention =
        wire::rj::member(wire::rj::member(wire::clientBody(request), "options"), "cacheRetention");
    return !wire::rj::equals(retention, "none");
}

QJsonObject withCacheControl(QJsonObject block) {
    block.insert(L("cache_control"), QJsonObject{{L("type"), L("ephemeral")}});
    return block;
}

// Breakpoints where pi-ai puts them: the system prompt, the last tool, and the last block of the
// last user turn (the prefix every next turn repeats). Three of Messages' four.
void addCacheBreakpoints(QJsonObject &body) {
    const QJsonValue system = body.value(L("system"));
    if (system.isString())
        body.insert(L("system"),
                    QJsonArray{withCacheControl(QJsonObject{{L("type"), L("text")}, {L("text"), system.toString()}})});
    QJsonArray tools = body.value(L("tools")).toArray();
    if (!tools.isEmpty()) {
        tools.replace(tools.size() - 1, withCacheControl(tools.last().toObject()));
        body.insert(L("tools"), tools);
    }
    QJsonArray messages = body.value(L("messages")).toArray();
    for (qsizetype i = messages.size() - 1; i >= 0; --i) {
        QJsonObject m = messages.at(i).toObject();
        if (m.value(L("role")).toString() != L("user"))
            continue;
        QJsonArray content = m.value(L("content")).toArray();
        if (content.isEmpty())
            break;
        const QJsonObject last = content.last().toObject();
        const QString type = last.value(L("type")).toString();
        if (type == L("thinking") || type == L("redacted_thinking"))
            break; // never in a user turn; cache_control is refused on them
        content.replace(content.size() - 1, withCacheControl(last));
        m.insert(L("content"), content);
        messages.replace(i, m);
        body.insert(L("messages"), messages);
        break;
    }
}

} // namespace

QStringList AnthropicAdapter::stopSequencesCarried(const model::Options &options) {
    QStringList stops;
    for (const QString &s : options.stop)
        if (!s.trimmed().isEmpty())
            stops << s;
    return stops;
}

qsizetype AnthropicAdapter::stopSequencesSent(const model::ChatRequest &request, const Target &) const {
    if (request.sourceApi == kApi)
        return request.options.stop.size(); // the client's own body, as it sent it
    return stopSequencesCarried(request.options).size();
}

bool AnthropicAdapter::isBlank(const QString &text) {
    return std::all_of(text.cbegin(), text.cend(), [](QChar c) { return c.isSpace(); });
}

QString AnthropicAdapter::toolCallId(const QString &id) {
    return wire::anthropicToolId(id);
}

namespace {
// The thinking budget a converted body asks for (0: thinking off) and the max_tokens it goes with.
struct ThinkingPlan {
    int budget = 0;
    int maxTokens = 0;
};
ThinkingPlan thinkingPlan(const Options &opt, const Context &ctx) {
    ThinkingPlan plan{opt.thinkingBudget.value_or(model::thinkingBudgetForEffort(opt.reasoning)),
                      opt.maxTokens.value_or(kDefaultMaxTokens)};
    // Messages rejects a forced tool_choice with thinking on: the client's forced call wins.
    const bool forcedTool =
        !ctx.tools.isEmpty() && !opt.toolChoice.isEmpty() && opt.toolChoice != L("auto") && opt.toolChoice != L("none");
    if (forcedTool)
        plan.budget = 0;
    if (plan.budget > 0) {
        plan.budget = qMax(plan.budget, 1024); // Messages' minimum budget
        if (plan.maxTokens <= plan.budget) {
            if (opt.maxTokens) {
                // The client's cap is never raised: the budget shrinks to fit under it,
                // and with no room for Messages' minimum budget thinking is off.
                plan.budget = plan.maxTokens - qMin(plan.maxTokens / 4, 4096);
                if (plan.budget < 1024)
                    plan.budget = 0;
            } else {
                plan.maxTokens = plan.budget + 4096; // the gateway's own default may grow
            }
        }
    }
    return plan;
}

// The request as this candidate takes it (requestForTarget), the gateway's own default max_tokens
// lowered to the model's maximum too.
const model::ChatRequest &requestForModel(const model::ChatRequest &request, const Target &target,
                                          model::ChatRequest &scratch) {
    const model::ChatRequest *sent = &requestForTarget(request, target, scratch);
    if (!sent->options.maxTokens && target.maxOutputTokens && *target.maxOutputTokens < kDefaultMaxTokens) {
        if (sent != &scratch)
            scratch = *sent;
        scratch.options.maxTokens = target.maxOutputTokens;
        sent = &scratch;
    }
    return *sent;
}
} // namespace

namespace {
namespace rj = wire::rj;

// AnthropicAdapter::isBlank, read where the client's body stands.
bool blankBytes(const rj::Value *text) {
    const std::string_view bytes = rj::bytes(text);
    return std::all_of(bytes.begin(), bytes.end(),
                       [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; });
}

// A block applyThinkingRules leaves out of an assistant turn (isForeignThinking, isBlankText), read
// where the client's body stands.
bool leftOutBlock(const rj::Value *block, bool keepSigned) {
    const std::string_view type = rj::bytes(rj::member(block, "type"));
    if (type == "thinking" || type == "redacted_thinking") {
        if (!keepSigned)
            return true;
        if (type == "redacted_thinking") {
            const rj::Value *data = rj::member(block, "data");
            return !rj::isString(data) || data->GetStringLength() == 0;
        }
        const QString signature = rj::toString(rj::member(block, "signature"));
        return signature.isEmpty() || !untagSignature(signature).api.isEmpty();
    }
    return type == "text" && blankBytes(rj::member(block, "text"));
}

// Whether applyThinkingRules leaves the assistant turn `m` out: nothing in it but as the last
// message (a prefill), or nothing but blocks it leaves out.
bool leftOutTurn(const rj::Value &m, bool final, bool keepSigned) {
    const rj::Value *content = rj::member(&m, "content");
    if (rj::isString(content))
        return !final && blankBytes(content);
    if (!content || !content->IsArray())
        return false;
    if (content->Empty())
        return !final;
    for (const rj::Value &block : content->GetArray())
        if (!leftOutBlock(&block, keepSigned))
            return false;
    return true;
}

bool isSystemMessage(const rj::Value &m) {
    return rj::equals(rj::member(&m, "role"), "system");
}

// Whether the client's body holds a `system` message between its turns.
bool holdsSystemMessage(const rj::Value *body) {
    const auto messages = rj::elements(rj::member(body, "messages"));
    return std::any_of(messages.begin(), messages.end(), isSystemMessage);
}

// A system message of words alone (a string, or text blocks), which can join the top-level system
// whole; a tool change (tool_addition, tool_removal) cannot.
bool textOnly(const rj::Value &m) {
    const rj::Value *content = rj::member(&m, "content");
    if (rj::isString(content))
        return true;
    const auto blocks = rj::elements(content);
    return std::all_of(blocks.begin(), blocks.end(),
                       [](const rj::Value &block) { return rj::equals(rj::member(&block, "type"), "text"); });
}

// Whether applyThinkingRules, leaving out the assistant turn after a system message, would leave that
// message of words before a user turn, where it joins the top-level system instead.
bool misplacesSystemMessage(const rj::Value *body, bool keepSigned) {
    const rj::Value *messages = rj::asArray(rj::member(body, "messages"));
    const rapidjson::SizeType count = messages ? messages->Size() : 0;
    for (rapidjson::SizeType i = 0; i < count; ++i) {
        if (!isSystemMessage((*messages)[i]) || !textOnly((*messages)[i]))
            continue;
        rapidjson::SizeType next = i + 1;
        while (next < count && rj::equals(rj::member(&(*messages)[next], "role"), "assistant") &&
               leftOutTurn((*messages)[next], next + 1 == count, keepSigned))
            ++next;
        if (next > i + 1 && next < count && !rj::equals(rj::member(&(*messages)[next], "role"), "assistant"))
            return true;
    }
    return false;
}

// A sampling member of a client's body that a Claude since 4.7 refuses: any value but the default
// (Claude Code sends temperature 1, which goes on, spliced); top_k has no default to send.
bool refusedSamplingValue(std::string_view key, std::optional<double> value) {
    return key == "top_k" || value != 1.0;
}
bool refusedSampling(const char *key, const wire::rj::Value *v) {
    return v && refusedSamplingValue(key, wire::rj::isNumber(v) ? std::optional(wire::rj::toDouble(v)) : std::nullopt);
}

// The thinking budget a Claude before 4.6 gets for a client's adaptive thinking at `effort` (high
// when none), under an output cap of `cap` as a converted request's (buildBody). Below Messages'
// minimum of 1024, thinking is off.
int adaptiveBudget(const QString &effort, int cap) {
    const int budget = model::thinkingBudgetForEffort(effort.isEmpty() ? QStringLiteral("high") : effort);
    return cap <= budget ? cap - qMin(cap / 4, 4096) : budget;
}
} // namespace

QStringList AnthropicAdapter::droppedFor(const model::ChatRequest &request, const Target &target) const {
    const Options &opt = request.options;
    const ClaudeModel claude = ClaudeModel::of(target.modelId);
    if (request.sourceApi == kApi) {
        // The client's own body goes as it sent it, but for what this Claude refuses (fitToModel):
        // its body was written for the chain's first model, perhaps another Claude.
        const rj::Value *body = wire::clientBody(request);
        QStringList out;
        // System messages between the turns that join the top-level system, where they stood lost
        // (fitToModel, applyThinkingRules).
        if (holdsSystemMessage(body) &&
            (!claude.takesSystemMessages() || misplacesSystemMessage(body, target.replayReasoning)))
            out << QStringLiteral("messages[role=system]");
        if (claude.refusesSampling())
            for (const char *key : kSamplingMembers)
                if (refusedSampling(key, rj::member(body, key)))
                    out << QLatin1String(key);
        // The effort a Claude before 4.6 refuses (Opus 4.5 takes it). It lives on as the size of the
        // thinking budget an adaptive thinking becomes; else what it asked of the answer is lost (with
        // thinking off, how many tokens Claude spends on text and tool calls). high is the default.
        const QString effort = rj::toString(rj::member(rj::member(body, "output_config"), "effort"));
        if (claude.takesEffort() || effort.isEmpty() || effort == QLatin1String("high"))
            return out;
        const int cap = loweredOutputCap(request, target).value_or(rj::toInt(rj::member(body, "max_tokens")));
        if (!rj::equals(rj::member(rj::member(body, "thinking"), "type"), "adaptive") ||
            adaptiveBudget(effort, cap) < 1024)
            out << QStringLiteral("output_config.effort");
        return out;
    }
    if (!opt.temperature && !opt.topP)
        return {};
    // As buildBody leaves them out: all of them while thinking or for a model that takes none,
    // else top_p beside temperature.
    const QStringList sampling = OpenAICompletionsAdapter::samplingMembers(request); // by the client's names
    if (claude.refusesSampling()) {
        // Named when they said something: a default value (1) is not lost.
        QStringList said;
        if (opt.temperature && *opt.temperature != 1.0)
            said << sampling.first();
        if (opt.topP && *opt.topP != 1.0)
            said << sampling.last();
        return said;
    }
    model::ChatRequest scratch;
    const model::ChatRequest &sent = requestForModel(request, target, scratch);
    if (thinkingPlan(sent.options, sent.context).budget > 0)
        return sampling;
    return opt.temperature && opt.topP ? QStringList{sampling.last()} : QStringList();
}

QJsonObject AnthropicAdapter::buildBody(const model::ChatRequest &request, const QString &modelId) {
    const Context &ctx = request.context;
    const Options &opt = request.options;
    // Turns of one role side by side are one turn, as Messages would merge them itself; merged here,
    // the thinking rules below see the turn Anthropic will see. (An empty assistant turn, left out,
    // puts tool results and the user's next words side by side: one turn that continues a tool loop.)
    MergedTurns turns(L("content"));
    const auto appendTurn = [&turns](QLatin1String role, const QJsonArray &content) { turns.append(role, content); };
    // Consecutive tool results travel together in one user turn, as Messages requires.
    QJsonArray pendingResults;
    auto flushResults = [&] {
        if (!pendingResults.isEmpty())
            appendTurn(L("user"), pendingResults);
        pendingResults = {};
    };
    // Each result right after the turn of its call, the user's words after them (Messages
    // refuses a tool_use whose result is not at the start of the next turn).
    // Repeated tool call ids are made unique by applyThinkingRules (uniqueToolUseIds), below.
    const QList<Message> history = resultsAfterTheirCalls(ctx.messages);
    for (const Message &m : history) {
        if (m.role == Role::ToolResult) {
            QJsonObject r{{L("type"), L("tool_result")}, {L("tool_use_id"), toolCallId(m.toolCallId)}};
            const QJsonArray content = userContent(m.content);
            if (!content.isEmpty())
                r.insert(L("content"), content);
            if (m.isError)
                r.insert(L("is_error"), true);
            pendingResults.append(r);
            continue;
        }
        if (m.role == Role::User) {
            QJsonArray content = userContent(m.content);
            if (!pendingResults.isEmpty()) { // results first, then the user's words, in one turn
                for (const QJsonValue &v : content)
                    pendingResults.append(v);
                flushResults();
                continue;
            }
            if (!content.isEmpty())
                appendTurn(L("user"), content);
            continue;
        }
        flushResults();
        const QJsonArray content = assistantContent(m);
        if (!content.isEmpty())
            appendTurn(L("assistant"), content);
    }
    flushResults();
    const QJsonArray messages = turns.take();

    const auto [thinkingBudget, maxTokens] = thinkingPlan(opt, ctx);
    const ClaudeModel claude = ClaudeModel::of(modelId);
    QJsonObject body{
        {L("model"), modelId}, {L("max_tokens"), maxTokens}, {L("stream"), true}, {L("messages"), messages}};
    if (!ctx.systemPrompt.isEmpty())
        body.insert(L("system"), ctx.systemPrompt);
    QJsonObject outputConfig;
    if (thinkingBudget > 0 && claude.refusesManualThinking()) {
        // Claude since 4.7 thinks adaptively, as hard as the effort says; a budget is refused.
        body.insert(L("thinking"), QJsonObject{{L("type"), L("adaptive")}});
        outputConfig.insert(L("effort"), claudeEffortFor(opt.reasoning, thinkingBudget));
    } else if (thinkingBudget > 0) {
        body.insert(L("thinking"), QJsonObject{{L("type"), L("enabled")}, {L("budget_tokens"), thinkingBudget}});
        // Extended thinking rejects a temperature other than 1 and top_p changes, so they are left out.
    } else if (!claude.refusesSampling()) { // since 4.7 Claude refuses any but the default
        // Anthropic takes 0 to 1, OpenAI and Gemini 0 to 2, all with 1 as the default: a hotter
        // request goes at Anthropic's hottest rather than be refused with a 400 failover cannot pass.
        if (opt.temperature)
            body.insert(L("temperature"), std::clamp(*opt.temperature, 0.0, 1.0));
        // Claude models since Sonnet 4.5 refuse temperature and top_p together (a 400 no failover
        // gets past), and OpenAI's SDKs send both readily: temperature, the one every API has, stays.
        if (opt.topP && !opt.temperature)
            body.insert(L("top_p"), *opt.topP);
        if (opt.topK)
            body.insert(L("top_k"), *opt.topK);
    }
    // The rest the gateway cuts at itself (stopSequencesSent).
    if (const QStringList stops = stopSequencesCarried(opt); !stops.isEmpty())
        body.insert(L("stop_sequences"), QJsonArray::fromStringList(stops));
    // Structured outputs (GA): the answer's text is JSON following the schema, in the subset of JSON
    // Schema Messages compiles (a schema it cannot take, or one past the limits below on its own,
    // made the candidate incompatible).
    const bool jsonOutput = opt.outputFormat.type == L("json_schema");
    const QJsonObject outputSchema = jsonOutput ? anthropic_schema::shape(opt.outputFormat.schema) : QJsonObject();
    // Messages compiles every strict schema of the request into one grammar, within limits on the
    // request as a whole (anthropic_schema.h); past one it refuses the whole request. The structured
    // output counts first (it has no form without its schema), then each strict tool in the client's
    // order while the request stays within them.
    anthropic_schema::Complexity spent =
        jsonOutput ? anthropic_schema::complexity(outputSchema) : anthropic_schema::Complexity();
    int strictTools = 0;
    QJsonArray tools;
    for (const Tool &t : ctx.tools) {
        QJsonObject schema = t.parameters;
        bool widened = false;
        if (schema.isEmpty())
            schema = QJsonObject{{L("type"), L("object")}, {L("properties"), QJsonObject()}};
        else // an object schema at the top, as Messages takes one (anthropic_schema.h)
            schema = anthropic_schema::toolInput(schema, &widened);
        // Strict tool use: inputs follow the schema, which Messages compiles as it does structured
        // outputs (anthropic_schema.h). A schema it cannot compile in any shape (arguments of any
        // kind), one past the request's limits, or one widened from a top-level combinator, goes as
        // a plain tool, whose inputs Claude still writes from the schema.
        bool strict = t.strict.value_or(false) && !widened && !anthropic_schema::unsupported(schema);
        if (strict) {
            const QJsonObject shaped = anthropic_schema::shape(schema);
            anthropic_schema::Complexity after = spent;
            after += anthropic_schema::complexity(shaped);
            strict = strictTools < anthropic_schema::kMaxStrictTools && after.withinLimits();
            if (strict) {
                spent = after;
                ++strictTools;
                schema = shaped;
            }
        }
        QJsonObject tool{{L("name"), t.name}, {L("input_schema"), schema}};
        const QString description = t.custom ? customToolDescription(t) : t.description;
        if (!description.isEmpty())
            tool.insert(L("description"), description);
        if (strict)
            tool.insert(L("strict"), true);
        tools.append(tool);
    }
    // A Responses client's cap on built-in tool calls is this search's max_uses: web search is the
    // one built-in tool that gets here (adapter_registry.cpp).
    const int searchCap = request.sourceApi == wire::Api::OpenAIResponses ? searchCapOf(wire::clientBody(request)) : 0;
    for (const BuiltinTool &b : ctx.builtinTools)
        if (b.kind == L("web_search")) {
            QJsonObject search = webSearchTool(b.config);
            if (searchCap > 0)
                search.insert(L("max_uses"), searchCap);
            tools.append(search);
        }
    if (!tools.isEmpty()) {
        body.insert(L("tools"), tools);
        QJsonObject choice;
        if (opt.toolChoice == L("required"))
            choice = QJsonObject{{L("type"), L("any")}};
        else if (opt.toolChoice == L("none"))
            choice = QJsonObject{{L("type"), L("none")}};
        else if (!opt.toolChoice.isEmpty() && opt.toolChoice != L("auto"))
            choice = QJsonObject{{L("type"), L("tool")}, {L("name"), opt.toolChoice}};
        else if (!opt.toolChoice.isEmpty() || opt.parallelToolCalls == false)
            choice = QJsonObject{{L("type"), L("auto")}};
        // parallel_tool_calls: false is Messages' disable_parallel_tool_use (not valid with none).
        if (opt.parallelToolCalls == false && choice.value(L("type")).toString() != L("none"))
            choice.insert(L("disable_parallel_tool_use"), true);
        if (!choice.isEmpty())
            body.insert(L("tool_choice"), choice);
    }
    if (jsonOutput)
        outputConfig.insert(L("format"), QJsonObject{{L("type"), L("json_schema")}, {L("schema"), outputSchema}});
    if (!outputConfig.isEmpty())
        body.insert(L("output_config"), outputConfig);
    declareCalledTools(body);
    applyThinkingRules(body);
    if (wantsPromptCache(request))
        addCacheBreakpoints(body);
    return body;
}

namespace {

// A thinking block Anthropic did not sign: another API's (tagged) or an empty signature; with
// `keepSigned` false, any thinking block.
bool isForeignThinking(const QJsonObject &block, bool keepSigned) {
    const QString type = block.value(L("type")).toString();
    if (!keepSigned)
        return type == L("thinking") || type == L("redacted_thinking");
    if (type == L("thinking")) {
        const QString signature = block.value(L("signature")).toString();
        return signature.isEmpty() || !untagSignature(signature).api.isEmpty();
    }
    return type == L("redacted_thinking") && block.value(L("data")).toString().isEmpty();
}

// A text block of whitespace alone, which Messages refuses in an assistant turn: an answer another
// API gave ("\n\n" before a tool call) as the client kept it.
bool isBlankText(const QJsonObject &block) {
    return block.value(L("type")).toString() == L("text") &&
           AnthropicAdapter::isBlank(block.value(L("text")).toString());
}

// An assistant turn's content with nothing in it: [] or whitespace alone. Messages refuses such a turn
// anywhere but last ("all messages must have non-empty content except for the optional final assistant
// message"): another API's empty answer (a Gemini SAFETY block, a Chat server's "") as the client kept
// it, which made every later request of the conversation a 400 (probe AA3 F1).
bool isEmptyContent(const QJsonValue &content) {
    return content.isArray() ? content.toArray().isEmpty()
                             : content.isString() && AnthropicAdapter::isBlank(content.toString());
}

// Tool_use ids in a Messages body as Messages accepts them, converted or passthrough: each in its pattern
// (wire::anthropicToolId: an Anthropic-compatible server's "grep:3" came back from its client as it was told, probe
// J1 2), and unique (a Chat server that names every turn's call "call_0" gave an Anthropic client such ids, and its
// history comes back with them). Each tool_result takes the id of the first call of its id in the assistant turn
// before it that no result has taken yet: two calls of one answer under one id (DeepSeek, GLM, Kimi) are answered in
// order, one result each (probe J1 1), where both results went to the second call. A result no call of that turn
// answers keeps the latest call of its id. True when an id changed.
bool uniqueToolUseIds(QJsonArray &messages) {
    wire::ToolIdPairing ids(wire::kAnthropicMaxToolIdLength);
    bool changed = false;
    for (qsizetype i = 0; i < messages.size(); ++i) {
        QJsonObject m = messages.at(i).toObject();
        const bool assistant = m.value(L("role")).toString() == L("assistant");
        if (assistant)
            ids.beginCallingTurn();
        QJsonArray content = m.value(L("content")).toArray();
        bool turnChanged = false;
        for (qsizetype j = 0; j < content.size(); ++j) {
            QJsonObject block = content.at(j).toObject();
            const QString type = block.value(L("type")).toString();
            const bool call = assistant && type == L("tool_use");
            if (!call && (assistant || type != L("tool_result")))
                continue;
            const char *key = call ? "id" : "tool_use_id";
            const QString id = block.value(QLatin1String(key)).toString();
            const QString valid = wire::anthropicToolId(id);
            const QString sent = call ? ids.call(id, valid) : ids.result(id, valid);
            if (sent != id) {
                block.insert(QLatin1String(key), sent);
                content.replace(j, block);
                turnChanged = true;
            }
        }
        if (turnChanged) {
            m.insert(L("content"), content);
            messages.replace(i, m);
            changed = true;
        }
    }
    return changed;
}

// Whether the client's thinking budget (if any) stays under an output cap of `cap`: Messages wants
// budget_tokens below max_tokens.
bool thinkingFits(const wire::rj::Value *body, int cap) {
    namespace rj = wire::rj;
    const rj::Value *thinking = rj::member(body, "thinking");
    const rj::Value *budget = rj::member(thinking, "budget_tokens");
    return !rj::equals(rj::member(thinking, "type"), "enabled") || !rj::isNumber(budget) || rj::toDouble(budget) < cap;
}

// The client's body with max_tokens lowered to `cap`: a thinking budget that no longer fits shrinks
// under it as a converted request's does (buildBody), and with no room for Messages' minimum budget
// of 1024 thinking is off.
void fitUnderOutputCap(QJsonObject &body, int cap) {
    body.insert(L("max_tokens"), cap);
    QJsonObject thinking = body.value(L("thinking")).toObject();
    if (thinking.value(L("type")).toString() != L("enabled") || thinking.value(L("budget_tokens")).toDouble() < cap)
        return;
    const int budget = cap - qMin(cap / 4, 4096);
    if (budget < 1024) {
        body.remove(L("thinking"));
        return;
    }
    thinking.insert(L("budget_tokens"), budget);
    body.insert(L("thinking"), thinking);
}

} // namespace

int AnthropicAdapter::searchCapOf(const wire::rj::Value *body) {
    const wire::rj::Value *cap = wire::rj::member(body, "max_tool_calls");
    return cap && cap->IsInt() && cap->GetInt() >= 1 ? cap->GetInt() : 0;
}

bool AnthropicAdapter::callsUndeclaredTools(const wire::rj::Value *body) {
    namespace rj = wire::rj;
    if (rj::arraySize(rj::asArray(rj::member(body, "tools"))) > 0)
        return false;
    for (const rj::Value &m : rj::elements(rj::member(body, "messages")))
        for (const rj::Value &block : rj::elements(rj::member(&m, "content")))
            if (const rj::Value *type = rj::member(&block, "type");
                rj::equals(type, "tool_use") || rj::equals(type, "tool_result"))
                return true;
    return false;
}

bool AnthropicAdapter::declareCalledTools(QJsonObject &body) {
    if (!body.value(L("tools")).toArray().isEmpty())
        return false;
    QStringList names;
    QSet<QString> declared; // names' members: a search of the list per call cost N² (probe Z6 F2)
    bool toolBlocks = false;
    for (const QJsonValue &m : body.value(L("messages")).toArray())
        for (const QJsonValue &v : m.toObject().value(L("content")).toArray()) {
            const QJsonObject block = v.toObject();
            const QString type = block.value(L("type")).toString();
            toolBlocks |= type == L("tool_use") || type == L("tool_result");
            const QString name = block.value(L("name")).toString();
            // A name a definition cannot have (a history's tool_use name takes up to 200
            // characters) is left out: one tool declared is what Messages asks for.
            if (type == L("tool_use") && isValidToolName(name, kApi) && !declared.contains(name)) {
                declared.insert(name);
                names << name;
            }
        }
    if (!toolBlocks || names.isEmpty())
        return false;
    QJsonArray tools;
    for (const QString &name : std::as_const(names))
        tools.append(
            QJsonObject{{L("name"), name},
                        {L("input_schema"), QJsonObject{{L("type"), L("object")}, {L("properties"), QJsonObject()}}}});
    body.insert(L("tools"), tools);
    body.insert(L("tool_choice"), QJsonObject{{L("type"), L("none")}});
    return true;
}

bool AnthropicAdapter::thinkingRulesChangeNothing(const wire::rj::Value *body) {
    // applyThinkingRules without building anything: with no block to drop, its messages are
    // the body's own, and its last assistant turn is the last message whose role is assistant.
    const rj::Value *messages = rj::asArray(rj::member(body, "messages"));
    const rj::Value *lastAssistant = nullptr;
    bool toolLoop = false;                    // a tool_result in the user messages after the last assistant turn
    std::vector<std::string_view> toolUseIds; // repeated or foreign ones are mapped (uniqueToolUseIds)
    const qsizetype count = rj::arraySize(messages);
    qsizetype index = 0;
    for (const rj::Value &m : rj::elements(messages)) {
        const bool final = ++index == count;
        if (!rj::equals(rj::member(&m, "role"), "assistant")) {
            for (const rj::Value &block : rj::elements(rj::member(&m, "content")))
                toolLoop |= rj::equals(rj::member(&block, "type"), "tool_result");
            continue;
        }
        // isEmptyContent, before the last message
        const rj::Value *content = rj::member(&m, "content");
        if (!final &&
            ((content && content->IsArray() && content->Empty()) || (rj::isString(content) && blankBytes(content))))
            return false;
        lastAssistant = &m;
        toolLoop = false;
        for (const rj::Value &block : rj::elements(rj::member(&m, "content"))) {
            if (leftOutBlock(&block, true))
                return false;
            if (rj::equals(rj::member(&block, "type"), "tool_use")) {
                const std::string_view id = rj::bytes(rj::member(&block, "id"));
                if (!wire::isAnthropicToolId(id))
                    return false; // mapped to Messages' pattern (uniqueToolUseIds)
                toolUseIds.push_back(id);
            }
        }
    }
    if (wire::sortedIdsRepeat(toolUseIds))
        return false;
    const rj::Value *thinking = rj::member(body, "thinking");
    if (rj::isEmptyObject(thinking) || rj::equals(rj::member(thinking, "type"), "disabled") || !lastAssistant)
        return true;
    if (!toolLoop)
        return true;
    const rj::Value *content = rj::asArray(rj::member(lastAssistant, "content"));
    const std::string_view first = content && !content->Empty() ? rj::bytes(rj::member(&(*content)[0], "type")) : "";
    return first == "thinking" || first == "redacted_thinking";
}

namespace {
// Context edits that clear thinking need thinking on: Messages refuses the request otherwise (400
// "clear_thinking_20251015 strategy requires thinking to be enabled or adaptive"), a request error
// no failover gets past. When the gateway sends a turn without thinking, they go too; the other
// edits stay, and an empty list goes with its member.
void dropThinkingEditsWithoutThinking(QJsonObject &body) {
    const QString mode = body.value(L("thinking")).toObject().value(L("type")).toString();
    if (mode == L("enabled") || mode == L("adaptive") || !body.contains(L("context_management")))
        return;
    QJsonObject management = body.value(L("context_management")).toObject();
    const QJsonArray edits = management.value(L("edits")).toArray();
    QJsonArray kept;
    for (const QJsonValue &edit : edits)
        if (!edit.toObject().value(L("type")).toString().startsWith(L("clear_thinking")))
            kept.append(edit);
    if (kept.size() == edits.size())
        return;
    if (kept.isEmpty() && management.size() == 1) {
        body.remove(L("context_management"));
        return;
    }
    management.insert(L("edits"), kept);
    body.insert(L("context_management"), management);
}
} // namespace

namespace {
// The system messages between the turns at `at` (ascending indices of `messages`) taken out, their
// words joined to the top-level `system` in order, as a converted request's are
// (AnthropicMessagesCodec::decode): text blocks after its own (a `system` string becomes the first),
// where each stood lost. Plain text: a cache_control moved ahead of the messages' own could put a
// 5-minute breakpoint before a 1-hour one, which Messages refuses. Blank text goes nowhere (Messages
// refuses a text block of whitespace alone), and so does what is no text: a tool change never gets
// here (AnthropicAdapter::systemMessageIncompatibility).
void joinSystemMessages(QJsonObject &body, QJsonArray &messages, const QList<qsizetype> &at) {
    QJsonArray system;
    if (const QJsonValue given = body.value(L("system")); given.isArray())
        system = given.toArray();
    else if (!given.toString().isEmpty())
        system.append(QJsonObject{{L("type"), L("text")}, {L("text"), given.toString()}});
    const qsizetype own = system.size();
    const auto join = [&system](const QString &text) {
        if (!AnthropicAdapter::isBlank(text))
            system.append(QJsonObject{{L("type"), L("text")}, {L("text"), text}});
    };
    QJsonArray kept;
    qsizetype next = 0;
    for (qsizetype i = 0; i < messages.size(); ++i) {
        if (next == at.size() || at.at(next) != i) {
            kept.append(messages.at(i));
            continue;
        }
        ++next;
        const QJsonValue content = messages.at(i).toObject().value(L("content"));
        if (content.isString())
            join(content.toString());
        for (const QJsonValue &block : content.toArray())
            if (block.toObject().value(L("type")).toString() == L("text"))
                join(block.toObject().value(L("text")).toString());
    }
    messages = kept;
    if (system.size() > own)
        body.insert(L("system"), system);
}

bool holdsTextOnly(const QJsonValue &content) {
    const QJsonArray blocks = content.toArray();
    return content.isString() || std::all_of(blocks.begin(), blocks.end(), [](const QJsonValue &block) {
               return block.toObject().value(L("type")).toString() == L("text");
           });
}

QString roleOf(const QJsonValue &message) {
    return message.toObject().value(L("role")).toString();
}
} // namespace

bool AnthropicAdapter::applyThinkingRules(QJsonObject &body, bool keepSigned) {
    bool changed = false;
    const QJsonArray sent = body.value(L("messages")).toArray();
    QJsonArray messages;
    qsizetype lastAssistant = -1;
    // A system message between the turns stands last or before an assistant turn in Messages: one
    // whose assistant turn is left out below may come to stand before a user turn.
    QList<qsizetype> bereft;
    const auto leaveOut = [&] {
        changed = true;
        if (const qsizetype at = messages.size() - 1;
            at >= 0 && roleOf(messages.at(at)) == L("system") && (bereft.isEmpty() || bereft.last() != at))
            bereft << at;
    };
    for (qsizetype i = 0; i < sent.size(); ++i) {
        const QJsonValue mv = sent.at(i);
        QJsonObject m = mv.toObject();
        const QJsonValue content = m.value(L("content"));
        // An empty turn holds nothing to lose; left out, Messages joins the user turns around it. The
        // last message may be empty: an assistant prefill, which Messages takes as it is.
        if (m.value(L("role")).toString() == L("assistant") && i + 1 < sent.size() && isEmptyContent(content)) {
            leaveOut();
            continue;
        }
        if (m.value(L("role")).toString() != L("assistant") || !content.isArray()) {
            if (m.value(L("role")).toString() == L("assistant"))
                lastAssistant = messages.size();
            messages.append(mv);
            continue;
        }
        QJsonArray kept;
        bool dropped = false;
        for (const QJsonValue &v : content.toArray()) {
            if (isForeignThinking(v.toObject(), keepSigned) || isBlankText(v.toObject()))
                dropped = true;
            else
                kept.append(v);
        }
        if (dropped) {
            changed = true;
            if (kept.isEmpty()) {
                leaveOut(); // nothing else in the turn: Messages joins the user turns around it
                continue;
            }
            m.insert(L("content"), kept);
        }
        lastAssistant = messages.size();
        messages.append(m);
    }
    // Such a message before a user turn joins the top-level system instead (misplacesSystemMessage),
    // unless it holds a tool change, which has no place there: the server decides.
    QList<qsizetype> misplaced;
    for (const qsizetype at : std::as_const(bereft))
        if (at + 1 < messages.size() && roleOf(messages.at(at + 1)) != L("assistant") &&
            holdsTextOnly(messages.at(at).toObject().value(L("content"))))
            misplaced << at;
    if (!misplaced.isEmpty()) {
        joinSystemMessages(body, messages, misplaced);
        if (lastAssistant >= 0)
            lastAssistant -= std::count_if(misplaced.begin(), misplaced.end(),
                                           [lastAssistant](qsizetype at) { return at < lastAssistant; });
    }
    if (uniqueToolUseIds(messages))
        changed = true;
    if (changed)
        body.insert(L("messages"), messages);

    // With thinking on, a tool loop's last assistant turn must start with a signed
    // thinking block; a turn answered elsewhere has none, so this turn goes without.
    const QJsonObject thinking = body.value(L("thinking")).toObject();
    if (thinking.isEmpty() || thinking.value(L("type")).toString() == L("disabled") || lastAssistant < 0 ||
        messages.isEmpty())
        return changed;
    // The user messages after the last assistant turn are one turn to Messages, which joins them: a
    // tool_result in any of them keeps the tool loop open. Only the last was looked at, so a tool
    // result followed by the user's own words ("continue", a Claude Code interjection, or a
    // thinking-only turn of another provider's left out between them) went with thinking on and
    // no thinking block, and Anthropic refused it 400, ending the chain (probe W1-1).
    bool toolLoop = false;
    for (qsizetype i = lastAssistant + 1; i < messages.size(); ++i)
        for (const QJsonValue &v : messages.at(i).toObject().value(L("content")).toArray())
            toolLoop |= v.toObject().value(L("type")).toString() == L("tool_result");
    if (!toolLoop)
        return changed;
    const QJsonArray content = messages.at(lastAssistant).toObject().value(L("content")).toArray();
    const QString first = content.isEmpty() ? QString() : content.first().toObject().value(L("type")).toString();
    if (first == L("thinking") || first == L("redacted_thinking"))
        return changed;
    turnThinkingOff(body);
    return true;
}

void AnthropicAdapter::turnThinkingOff(QJsonObject &body) {
    // A Claude that refuses `disabled` goes without the member: off by default (Opus 4.7), or its
    // adaptive default where thinking cannot go off (Opus 5.5), which Anthropic names the equivalent.
    if (ClaudeModel::of(body.value(L("model")).toString()).refusesDisabledThinking())
        body.remove(L("thinking"));
    else
        body.insert(L("thinking"), QJsonObject{{L("type"), L("disabled")}});
}

namespace {
// The output_config's effort, or "".
QString effortOf(const QJsonObject &body) {
    return body.value(L("output_config")).toObject().value(L("effort")).toString();
}

void removeEffort(QJsonObject &body) {
    QJsonObject config = body.value(L("output_config")).toObject();
    if (!config.contains(L("effort")))
        return;
    config.remove(L("effort"));
    if (config.isEmpty())
        body.remove(L("output_config"));
    else
        body.insert(L("output_config"), config);
}
} // namespace

bool AnthropicAdapter::fitsModel(const wire::rj::Value *body, const QString &modelId) {
    namespace rj = wire::rj;
    const ClaudeModel claude = ClaudeModel::of(modelId);
    if (!claude.takesSystemMessages() && holdsSystemMessage(body))
        return false;
    if (!claude.known())
        return true;
    if (claude.refusesSampling())
        for (const char *key : kSamplingMembers)
            if (refusedSampling(key, rj::member(body, key)))
                return false;
    const rj::Value *type = rj::member(rj::member(body, "thinking"), "type");
    if ((rj::equals(type, "adaptive") && !claude.takesAdaptiveThinking()) ||
        (rj::equals(type, "enabled") && claude.refusesManualThinking()) ||
        (rj::equals(type, "disabled") && claude.refusesDisabledThinking()))
        return false;
    return claude.takesEffort() || !rj::member(rj::member(body, "output_config"), "effort");
}

bool AnthropicAdapter::fitToModel(QJsonObject &body) {
    const ClaudeModel claude = ClaudeModel::of(body.value(L("model")).toString());
    bool changed = false;
    if (!claude.takesSystemMessages()) {
        // Claude Code sends system messages between the turns whatever the model: one that refuses
        // the role (or a server that knows only user and assistant turns) gets their words in the
        // top-level system, as a converted request does.
        QJsonArray messages = body.value(L("messages")).toArray();
        QList<qsizetype> at;
        for (qsizetype i = 0; i < messages.size(); ++i)
            if (roleOf(messages.at(i)) == L("system"))
                at << i;
        if (!at.isEmpty()) {
            joinSystemMessages(body, messages, at);
            body.insert(L("messages"), messages);
            changed = true;
        }
    }
    if (!claude.known())
        return changed;
    if (claude.refusesSampling())
        for (const char *key : kSamplingMembers)
            if (const QJsonValue v = body.value(QLatin1String(key));
                !v.isUndefined() &&
                refusedSamplingValue(key, v.isDouble() ? std::optional(v.toDouble()) : std::nullopt)) {
                body.remove(QLatin1String(key));
                changed = true;
            }
    QJsonObject thinking = body.value(L("thinking")).toObject();
    const QString type = thinking.value(L("type")).toString();
    if (type == L("adaptive") && !claude.takesAdaptiveThinking()) {
        // A Claude before 4.6 thinks by budget: the effort's, under the output cap as a converted
        // request's (buildBody), and off with no room for Messages' minimum of 1024.
        const int budget = adaptiveBudget(effortOf(body), body.value(L("max_tokens")).toInt());
        if (budget < 1024)
            body.remove(L("thinking"));
        else
            body.insert(L("thinking"), QJsonObject{{L("type"), L("enabled")}, {L("budget_tokens"), budget}});
        changed = true;
    } else if (type == L("enabled") && claude.refusesManualThinking()) {
        // Since 4.7 a budget is refused: adaptive thinking, at the effort the budget reaches.
        if (effortOf(body).isEmpty()) {
            QJsonObject config = body.value(L("output_config")).toObject();
            config.insert(L("effort"), claudeEffortFor(QString(), thinking.value(L("budget_tokens")).toInt()));
            body.insert(L("output_config"), config);
        }
        body.insert(L("thinking"), QJsonObject{{L("type"), L("adaptive")}});
        changed = true;
    } else if (type == L("disabled") && claude.refusesDisabledThinking()) {
        body.remove(L("thinking"));
        changed = true;
    }
    if (!claude.takesEffort() && !effortOf(body).isEmpty()) {
        removeEffort(body);
        changed = true;
    }
    return changed;
}

std::optional<QString> AnthropicAdapter::systemMessageIncompatibility(const wire::rj::Value *body,
                                                                      const QString &modelId) {
    namespace rj = wire::rj;
    if (ClaudeModel::of(modelId).takesSystemMessages())
        return std::nullopt;
    qsizetype i = -1;
    for (const rj::Value &m : rj::elements(rj::member(body, "messages"))) {
        ++i;
        if (!isSystemMessage(m))
            continue;
        for (const rj::Value &block : rj::elements(rj::member(&m, "content")))
            if (const std::string_view type = rj::bytes(rj::member(&block, "type")); type != "text")
                return QStringLiteral("messages[%1].content: block \"%2\" in a system message between the turns, "
                                      "which %3 does not take (only such a message's text can join its system "
                                      "prompt)")
                    .arg(i)
                    .arg(QString::fromUtf8(type.data(), qsizetype(type.size())).left(64),
                         modelId.isEmpty() ? QStringLiteral("this model") : modelId);
    }
    return std::nullopt;
}

HttpRequest AnthropicAdapter::buildRequest(const model::ChatRequest &request, const Target &target,
                                           const HeaderList &forwardHeaders) const {
    const bool passthrough = request.sourceApi == kApi;
    HttpRequest http;
    http.url = joinUrl(target.baseUrl, QStringLiteral("/v1/messages"));

    std::optional<QByteArray> spliced;
    // A model that takes fewer output tokens than the client asked for (Target::maxOutputTokens) gets
    // its maximum; a thinking budget that no longer fits under it is rewritten below.
    const std::optional<int> cap = passthrough ? loweredOutputCap(request, target) : std::nullopt;
    // The client's bytes as they are, with only model and stream set, when the thinking
    // rules leave the history alone (the usual case: no turn answered by another API).
    if (passthrough && target.replayReasoning && thinkingRulesChangeNothing(wire::clientBody(request)) &&
        !callsUndeclaredTools(wire::clientBody(request)) && (!cap || thinkingFits(wire::clientBody(request), *cap)) &&
        fitsModel(wire::clientBody(request), target.modelId)) {
        const QByteArray model = wire::jsonString(target.modelId);
        const QByteArray capText = cap ? QByteArray::number(*cap) : QByteArray();
        const wire::JsonMemberEdit edits[] = {{"model", model}, {"stream", "true"}, {"max_tokens", capText}};
        spliced = wire::spliceTopLevel(request.rawBody, std::span(edits, cap ? 3 : 2));
    }
    if (spliced) {
        http.body = std::move(*spliced);
    } else if (passthrough) {
        QJsonObject body = wire::clientBodyQt(request); // everything the client sent, unknown fields included
        body.insert(L("model"), target.modelId);
        body.insert(L("stream"), true);
        if (cap)
            fitUnderOutputCap(body, *cap);
        // The client wrote its body for the chain's first model: another Claude may take other
        // thinking and sampling members.
        fitToModel(body);
        // Except reasoning another API made (an earlier turn answered after a failover), or any
        // when this upstream refused a signature.
        applyThinkingRules(body, target.replayReasoning);
        dropThinkingEditsWithoutThinking(body);
        // A tool loop summed up without its tools, as another API takes it.
        declareCalledTools(body);
        http.body = wire::compactJson(body);
    } else {
        // Tool names Messages refuses go by an alias; the answer's calls come back by the client's.
        const ToolNameAliases aliases = ToolNameAliases::forRequest(request, kApi);
        std::optional<model::ChatRequest> aliased;
        const model::ChatRequest &converted = withToolAliases(request, aliases, aliased);
        http.toolNameOriginals = aliases.originals();
        // A model configured not to reason gets no `thinking`; its sampling then goes as asked. A
        // request asking for more output than the model takes goes with the model's maximum, and so
        // does the gateway's own default max_tokens.
        model::ChatRequest scratch;
        QJsonObject body = buildBody(requestForModel(converted, target, scratch), target.modelId);
        if (!target.replayReasoning)
            applyThinkingRules(body, false);
        http.body = wire::compactJson(body);
    }

    addHeader(http, "content-type", "application/json");
    addHeader(http, "accept", "text/event-stream");
    if (!target.credential.isEmpty()) {
        // OAuth access tokens (Claude subscriptions) go as Bearer; API keys as x-api-key.
        if (target.credential.startsWith("sk-ant-oat"))
            addHeader(http, "authorization", "Bearer " + target.credential);
        else
            addHeader(http, "x-api-key", target.credential);
    }
    QByteArray version = passthrough ? headerValue(forwardHeaders, "anthropic-version") : QByteArray();
    addHeader(http, "anthropic-version", version.isEmpty() ? QByteArray(kVersion) : version);
    if (passthrough) {
        const QByteArray beta = headerValue(forwardHeaders, "anthropic-beta");
        if (!beta.isEmpty())
            addHeader(http, "anthropic-beta", beta);
    }
    return http;
}

std::unique_ptr<StreamDecoder> AnthropicAdapter::makeDecoder(const Target &, NativeBody native) const {
    return std::make_unique<AnthropicStreamDecoder>(native);
}

UpstreamErrorInfo AnthropicAdapter::parseError(int, const QByteArray &body) const {
    return wire::parseErrorBody(kApi, body);
}

} // namespace sw::upstream
