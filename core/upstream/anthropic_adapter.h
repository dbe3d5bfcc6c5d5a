#pragma once
// Upstream API "anthropic-messages": POST {baseUrl}/v1/messages, streaming.

#include "core/upstream/upstream_adapter.h"
#include "core/wire/rapid_json.h"

#include <optional>

namespace sw::upstream {

class AnthropicAdapter final : public UpstreamAdapter {
public:
    static constexpr wire::Api kApi = wire::Api::AnthropicMessages;
    static constexpr const char *kVersion = "2023-06-01";

    const QString &api() const override { return apiNameString<kApi>(); }
    HttpRequest buildRequest(const model::ChatRequest &request, const Target &target,
                             const HeaderList &forwardHeaders) const override;
    std::unique_ptr<StreamDecoder> makeDecoder(const Target &target,
                                               NativeBody native = NativeBody::Keep) const override;
    UpstreamErrorInfo parseError(int status, const QByteArray &body) const override;
    // Messages refuses a stop sequence of whitespace alone ("each stop sequence must contain
    // non-whitespace", a 400 this turn and every later one): a converted body carries the others,
    // and the gateway ends the answer at those itself.
    qsizetype stopSequencesSent(const model::ChatRequest &request, const Target &target) const override;
    static QStringList stopSequencesCarried(const model::Options &options);
    // A converted request's sampling that Messages refuses beside what else it carries: temperature and
    // top_p while thinking is on, top_p beside temperature (Claude since Sonnet 4.5 refuses the two).
    QStringList droppedFor(const model::ChatRequest &request, const Target &target) const override;

    // The Messages body for a request that came in another format (see formats/translation_rules.md).
    static QJsonObject buildBody(const model::ChatRequest &request, const QString &modelId);
    // Anthropic tool ids must match ^[a-zA-Z0-9_-]{1,64}$; other APIs' ids are mapped onto that.
    static QString toolCallId(const QString &id);
    // Text of whitespace alone (or none), which Messages refuses as a text block: "text content
    // blocks must contain non-whitespace text".
    static bool isBlank(const QString &text);
    static constexpr qsizetype kMaxToolIdLength = wire::kAnthropicMaxToolIdLength;
    // History rules on a body about to go to Anthropic (converted or passthrough):
    // thinking blocks Anthropic did not sign (tagged or empty signatures) are dropped,
    // and a tool loop whose last assistant turn does not start with a signed thinking
    // block goes with thinking off, as Messages requires (translation_rules.md). Blank text
    // blocks of assistant turns are dropped, and so is an assistant turn with nothing left in it or
    // nothing in it at all ([], "") but the last message (a prefill); repeated tool_use ids are made
    // unique (each result following the latest call of its id). Messages refuses each of these too,
    // and a system message between the turns that would come to stand before a user turn once its
    // assistant turn is left out (Messages takes one last or before an assistant turn) joins the
    // top-level system.
    // With `keepSigned` false every thinking block is dropped, Anthropic's own signatures too
    // (the upstream refused one: another provider of this API signed it). Returns true when it
    // changed the body.
    static bool applyThinkingRules(QJsonObject &body, bool keepSigned = true);
    // Thinking off for the body's model: `disabled`, or no `thinking` member for a Claude that
    // refuses `disabled` (ClaudeModel::refusesDisabledThinking).
    static void turnThinkingOff(QJsonObject &body);
    // A same-API body (the client's, written for the chain's first model) made one its own model
    // takes (ClaudeModel): adaptive thinking as a budget before 4.6, a budget as adaptive thinking
    // at its effort since 4.7, `disabled` left out where refused, effort left out where refused,
    // sampling left out since 4.7 (named by droppedFor), and system messages between the turns
    // joined to the top-level system for a model that does not take them (ClaudeModel::
    // takesSystemMessages; named by droppedFor). True when it changed the body.
    static bool fitToModel(QJsonObject &body);
    // Why `modelId` cannot take the client's body, or nullopt: a system message between the turns
    // that holds more than words (a tool change: tool_addition, tool_removal), to a model that takes
    // no such message, where only words can join the top-level system.
    static std::optional<QString> systemMessageIncompatibility(const wire::rj::Value *body, const QString &modelId);
    // True when fitToModel would leave `body` (the client's, as parsed) as it is for `modelId`.
    static bool fitsModel(const wire::rj::Value *body, const QString &modelId);
    static constexpr const char *kSamplingMembers[] = {"temperature", "top_p", "top_k"};
    // True when applyThinkingRules would leave `body` (the client's, as parsed) as it is; reads
    // it without building anything.
    static bool thinkingRulesChangeNothing(const wire::rj::Value *body);
    // Messages refuses a history with tool_use or tool_result blocks and no tools ("Requests which
    // include `tool_use` or `tool_result` blocks must define tools."): an agent's last call, which
    // sums up its tool loop with the tools dropped. Such a body declares the tools its history
    // called (by the names it calls them, any object as input) with tool_choice none, so the model
    // reads the history and answers in words, as it would have without tools. True when it changed
    // the body.
    static bool declareCalledTools(QJsonObject &body);
    // True when `body` (the client's, as parsed) holds tool_use or tool_result blocks and no tools:
    // declareCalledTools is for it.
    static bool callsUndeclaredTools(const wire::rj::Value *body);
    // A Responses body's `max_tool_calls` as a web search's max_uses: the count when it is a whole
    // number from 1 (Anthropic's least), else 0 (none that goes).
    static int searchCapOf(const wire::rj::Value *body);
};

} // namespace sw::upstream
