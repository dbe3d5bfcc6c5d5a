#pragma once
// What of a client's request a converted request goes without, by name: the members of its body
// that no mapping reads and that are not a documented drop (formats/translation_rules.md, "The rule").
// A converted answer says them (x-switchman-dropped, the stream's first comment, the log), so no
// field that changes what the model does is dropped in silence.

#include "core/wire/api.h"
#include "core/wire/rapid_json.h"

#include <QStringList>

#include <algorithm>
#include <string_view>

namespace sw::wire {

// At most this many names, each at most kMaxDroppedName characters of [A-Za-z0-9_.[]-].
inline constexpr int kMaxDropped = 16;
inline constexpr int kMaxDroppedName = 64;

// The records of a provider's own tool runs in a history (a search, a fetched page, an MCP call's
// output, a generated image, code and its output): a converted request leaves them out by rule
// (formats/translation_rules.md) and names them. Responses input items of that kind:
inline constexpr std::string_view kResponsesToolRuns[] = {
    "web_search_call",       "file_search_call", "code_interpreter_call",
    "image_generation_call", "mcp_call",         "mcp_list_tools"};
inline bool isResponsesToolRun(std::string_view type) {
    return std::find(std::begin(kResponsesToolRuns), std::end(kResponsesToolRuns), type) !=
           std::end(kResponsesToolRuns);
}
// A Messages assistant block of that kind: server_tool_use, mcp_tool_use and every *_tool_result
// (web_search_tool_result, web_fetch_tool_result, code_execution_tool_result, mcp_tool_result, ...).
inline bool isServerToolRecord(std::string_view type) {
    constexpr std::string_view result = "_tool_result";
    return type == "server_tool_use" || type == "mcp_tool_use" ||
           (type.size() > result.size() && type.substr(type.size() - result.size()) == result);
}

// Top-level members, and members of a tool definition ("tools[].input_examples"), of `body` as
// `inbound` defines it, that a request converted to `target` does not carry; and so the members of
// what a mapping reads whole ("reasoning.…", "web_search_options.…" of a Chat client, a web search
// tool's settings, "tools[].search_context_size"), and a Chat assistant turn's audio answer
// ("messages[].audio", carried as its transcript). Empty for the same API
// (passthrough carries every member). For pi, the members of its `options`.
QStringList droppedMembers(const rj::Value *body, Api inbound, Api target);

// How much the model should write, as the two OpenAI APIs say it (Chat's `verbosity`, Responses'
// `text.verbosity`), from `body` as `inbound` defines it: "low", "medium" or "high", else empty.
QString verbosityOf(const rj::Value *body, Api inbound);

} // namespace sw::wire
