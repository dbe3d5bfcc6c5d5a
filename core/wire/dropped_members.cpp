#include "core/wire/dropped_members.h"

#include <algorithm>
#include <span>
#include <string_view>

namespace sw::wire {

namespace {
using Names = std::span<const std::string_view>;

// Read by a mapping, refused by a candidate-incompatibility check (adapter_registry.cpp), or a
// documented drop (cosmetic, or a row of the "lost when" table). Anything else a converted request
// would lose unsaid.
// clang-format off
constexpr std::string_view kChat[] = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "presence_penalty", "frequency_penalty", "stop", "reasoning_effort", "reasoning", "tools",
    "functions", "tool_choice", "function_call", "parallel_tool_calls", "response_format", "web_search_options",
    "n", "modalities", "audio", "metadata", "user", "service_tier", "store", "safety_identifier",
    "prompt_cache_key", "seed", "logit_bias", "logprobs", "top_logprobs", "verbosity", "prediction"};
constexpr std::string_view kMessages[] = {
    "model", "messages", "system", "max_tokens", "stream", "temperature", "top_p", "top_k", "stop_sequences",
    "tools", "tool_choice", "thinking", "output_config", "output_format", "metadata", "service_tier",
    "mcp_servers"};
constexpr std::string_view kResponses[] = {
    "model", "input", "instructions", "max_output_tokens", "stream", "stream_options", "temperature", "top_p",
    "reasoning", "text", "tools", "tool_choice", "parallel_tool_calls", "previous_response_id", "conversation",
    "store", "metadata", "include", "truncation", "top_logprobs", "logprobs", "service_tier", "user",
    "safety_identifier", "prompt_cache_key", "background", "prompt", "max_tool_calls"};
// pi's `options` (pi-ai's StreamOptions / SimpleStreamOptions, and what pi's streamProxy sends):
// read by PiNativeCodec::decode, or the client's own transport and caching settings, which the
// gateway replaces with its own (the keys, retries, timeouts and caching are the gateway's), and
// how a call's input streams (anthropicFineGrainedToolStreaming), which a pi answer streams its own
// way. repetitionPenalty and provider-specific options have no mapping: named.
constexpr std::string_view kPiOptions[] = {
    "maxTokens", "temperature", "topP", "presencePenalty", "reasoning", "thinkingBudgets", "toolChoice",
    "apiKey", "signal", "transport", "cacheRetention", "sessionId", "headers", "timeoutMs", "maxRetries",
    "maxRetryDelayMs", "metadata", "anthropicFineGrainedToolStreaming"};
// A function tool's members, as each API writes one (a built-in tool other than web search makes the
// candidate incompatible; web search's settings are below).
constexpr std::string_view kMessagesTool[] = {
    "name", "description", "input_schema", "type", "cache_control", "strict", "input_examples",
    "eager_input_streaming"}; // how the call's input streams, which a converted answer streams its own way
constexpr std::string_view kChatTool[] = {"type", "function", "custom"};
constexpr std::string_view kChatFunction[] = {"name", "description", "parameters", "strict"};
constexpr std::string_view kResponsesTool[] = {"type", "name", "description", "parameters", "strict", "format"};
// The members of what the Chat codec reads whole: OpenRouter's reasoning object, and the search settings.
constexpr std::string_view kChatReasoning[] = {"effort", "max_tokens", "enabled", "exclude"};
// A web search's settings, as each API writes them. The restrictions (which sites, how many searches)
// go where the target has them, else the candidate is incompatible (adapter_registry.cpp); what only
// steers the search (steersSearch) goes where the target has a field for it, else it is named.
// A Responses client's reasoning and text settings (summary and verbosity: documented drops, and
// verbosity is Chat's own field there).
constexpr std::string_view kResponsesReasoning[] = {"effort", "summary", "generate_summary"};
constexpr std::string_view kResponsesText[] = {"format", "verbosity"};
constexpr std::string_view kChatWebSearch[] = {"search_context_size", "user_location"};
constexpr std::string_view kMessagesWebSearch[] = {
    "type", "name", "cache_control", "strict", "allowed_domains", "blocked_domains", "max_uses", "user_location"};
constexpr std::string_view kResponsesWebSearch[] = {"type", "filters", "search_context_size", "user_location"};
constexpr std::string_view kResponsesWebSearchFilters[] = {"allowed_domains"};
// clang-format on

// Whether `target`'s web search has a field for `name`, a setting that only steers the search.
bool steersSearch(std::string_view name, Api target) {
    if (name == "user_location") // Gemini's googleSearch takes no location
        return target != Api::Google;
    if (name == "search_context_size") // only OpenAI's search has the control
        return target == Api::OpenAIResponses;
    return true;
}

// A web search tool the client defines by its type, as the inbound codec reads one.
bool webSearchTool(const rj::Value &tool, Api api) {
    const std::string_view type = rj::bytes(rj::member(&tool, "type"));
    return api == Api::AnthropicMessages ? type.starts_with("web_search_") : type.starts_with("web_search");
}

// A tool the client defines (a function, or a custom tool), not one the provider runs.
bool ownTool(const rj::Value &tool, Api api) {
    const rj::Value *type = rj::member(&tool, "type");
    if (api == Api::AnthropicMessages)
        return rj::isAbsent(type) || rj::equals(type, "custom");
    return rj::isAbsent(type) || rj::equals(type, "function") || rj::equals(type, "custom");
}

bool known(Names names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

void add(QStringList &out, std::string_view name, const char *prefix = "") {
    if (out.size() >= kMaxDropped)
        return;
    QString shown = QString::fromLatin1(prefix);
    for (const char c : name.substr(0, kMaxDroppedName)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-' || c == '.';
        shown += plain ? QChar::fromLatin1(c) : QChar(u'?');
    }
    if (!out.contains(shown))
        out << shown;
}

void unknownMembers(QStringList &out, const rj::Value *object, Names names, const char *prefix) {
    if (!object || !object->IsObject())
        return;
    for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
        const std::string_view name(it->name.GetString(), it->name.GetStringLength());
        if (!known(names, name))
            add(out, name, prefix);
    }
}

// A web search's settings that `target` does not carry: unknown ones, and those that only steer the
// search where its search has no field for them. A null sets nothing.
void searchSettings(QStringList &out, const rj::Value *object, Names names, Api target, const char *prefix) {
    if (!object || !object->IsObject())
        return;
    for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
        const std::string_view name(it->name.GetString(), it->name.GetStringLength());
        if (!it->value.IsNull() && (!known(names, name) || !steersSearch(name, target)))
            add(out, name, prefix);
    }
}
} // namespace

QStringList droppedMembers(const rj::Value *body, Api inbound, Api target) {
    QStringList out;
    if (inbound == target || !body || !body->IsObject())
        return out;
    // The client's own tools, each member a definition holds (Chat's nest one level down).
    // And a web search tool's settings (`search`; Responses' filters too).
    const auto tools = [&](Names names, Names function = {}, Names search = {}) {
        for (const rj::Value &t : rj::elements(rj::asArray(rj::member(body, "tools")))) {
            if (!ownTool(t, inbound)) {
                if (search.empty() || !webSearchTool(t, inbound))
                    continue;
                searchSettings(out, &t, search, target, "tools[].");
                if (inbound == Api::OpenAIResponses)
                    unknownMembers(out, rj::asObject(rj::member(&t, "filters")), kResponsesWebSearchFilters,
                                   "tools[].filters.");
                continue;
            }
            unknownMembers(out, &t, names, "tools[].");
            if (!function.empty())
                unknownMembers(out, rj::asObject(rj::member(&t, "function")), function, "tools[].function.");
        }
    };
    switch (inbound) {
    case Api::OpenAICompletions:
        unknownMembers(out, body, kChat, "");
        if (target == Api::OpenAIResponses) // the same field there: carried
            out.removeOne(QStringLiteral("prompt_cache_retention"));
        tools(kChatTool, kChatFunction);
        // Read whole by the codec, but for what is in them.
        unknownMembers(out, rj::asObject(rj::member(body, "reasoning")), kChatReasoning, "reasoning.");
        searchSettings(out, rj::asObject(rj::member(body, "web_search_options")), kChatWebSearch, target,
                       "web_search_options.");
        // Log probabilities asked for: no other answer carries them back.
        if (rj::toBool(rj::member(body, "logprobs")))
            add(out, "logprobs");
        if (const rj::Value *top = rj::member(body, "top_logprobs"); rj::isNumber(top) && rj::toDouble(top) > 0)
            add(out, "top_logprobs");
        // An audio answer in the history goes as its transcript, the turn's words; no other API takes
        // the sound itself back.
        for (const rj::Value &m : rj::elements(rj::asArray(rj::member(body, "messages"))))
            if (rj::equals(rj::member(&m, "role"), "assistant") && rj::asObject(rj::member(&m, "audio")))
                add(out, "audio", "messages[].");
        break;
    case Api::AnthropicMessages:
        unknownMembers(out, body, kMessages, "");
        tools(kMessagesTool, {}, kMessagesWebSearch);
        if (const rj::Value *effort = rj::member(rj::asObject(rj::member(body, "output_config")), "effort");
            !rj::isAbsent(effort) && !rj::equals(effort, "high")) {
            // With thinking off, effort governs only how much Claude writes, which no other API
            // controls for a model that is not thinking (AnthropicMessagesCodec). high is the default.
            const rj::Value *thinking = rj::member(rj::asObject(rj::member(body, "thinking")), "type");
            if (!rj::equals(thinking, "enabled") && !rj::equals(thinking, "adaptive"))
                add(out, "effort", "output_config.");
        }
        for (const rj::Value &m : rj::elements(rj::asArray(rj::member(body, "messages")))) {
            if (!rj::equals(rj::member(&m, "role"), "assistant"))
                continue;
            for (const rj::Value &block : rj::elements(rj::asArray(rj::member(&m, "content"))))
                if (const std::string_view type = rj::bytes(rj::member(&block, "type")); isServerToolRecord(type))
                    add(out, type, "messages[].content[].");
        }
        break;
    case Api::OpenAIResponses:
        unknownMembers(out, body, kResponses, "");
        tools(kResponsesTool, {}, kResponsesWebSearch);
        unknownMembers(out, rj::asObject(rj::member(body, "reasoning")), kResponsesReasoning, "reasoning.");
        unknownMembers(out, rj::asObject(rj::member(body, "text")), kResponsesText, "text.");
        if (const rj::Value *top = rj::member(body, "top_logprobs"); rj::isNumber(top) && rj::toDouble(top) > 0)
            add(out, "top_logprobs");
        for (const rj::Value &asked : rj::elements(rj::asArray(rj::member(body, "include"))))
            if (rj::equals(&asked, "message.output_text.logprobs"))
                add(out, "message.output_text.logprobs", "include[].");
        for (const rj::Value &item : rj::elements(rj::asArray(rj::member(body, "input"))))
            if (const std::string_view type = rj::bytes(rj::member(&item, "type")); isResponsesToolRun(type))
                add(out, type, "input[].");
        break;
    case Api::Pi: // pi's body is model, context and options: the options are what can go unread
        unknownMembers(out, rj::asObject(rj::member(body, "options")), kPiOptions, "options.");
        break;
    default:
        break; // Gemini is no inbound format
    }
    return out;
}

QString verbosityOf(const rj::Value *body, Api inbound) {
    const rj::Value *value = inbound == Api::OpenAICompletions ? rj::member(body, "verbosity")
                             : inbound == Api::OpenAIResponses
                                 ? rj::member(rj::asObject(rj::member(body, "text")), "verbosity")
                                 : nullptr;
    for (const char *level : {"low", "medium", "high"})
        if (rj::equals(value, level))
            return QString::fromLatin1(level);
    return {};
}

} // namespace sw::wire
