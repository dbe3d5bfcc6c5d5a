#pragma once
// What one Claude model takes of the Messages API's thinking, sampling and tool choice members,
// read from its id. Claude's generations differ there, each refusing with a 400 (a request error
// that ends a failover chain) what another takes:
// - 4.5 and earlier know only manual thinking (`enabled` with budget_tokens); `adaptive` and
//   output_config.effort are refused (Opus 4.5 takes effort).
// - 4.6 takes both forms.
// - 4.7 and later (Opus 4.7, 4.8, the Claude 5 family, Fable, Mythos) refuse the manual form
//   ("thinking.type.enabled is not supported for this model") and non-default temperature, top_p
//   and top_k.
// - Opus 4.7 and 4.8, Fable, Mythos and the 5.5 models refuse `disabled` as well: thinking goes
//   off by leaving the member out (Opus 4.7: off by default), or cannot go off at all (Opus 5.5,
//   Fable 5.1: leaving it out is the model's adaptive default, which Anthropic names the
//   equivalent).
// - Opus and Sonnet 5.5 and Fable 5.1 refuse a forced tool choice (`any` or a named tool).
// - Only Opus 4.8, Opus 5, the 5.5 models, Fable and Mythos take a `system` message between the
//   turns (mid-conversation system messages, which Claude Code sends whatever the model); the
//   others refuse the role ("role 'system' is not supported on this model"), Sonnet 5 among them.
// An id with no version Claude's ids carry (an alias, a tuned model, another server's name) is
// none of these: its body goes as it would to any Messages server, and the server decides. But
// for system messages between the turns, which such a server (DeepSeek's, Qwen's, Ollama's
// Messages endpoints) refuses as it knows only user and assistant turns.

#include <QString>

namespace sw::upstream {

struct ClaudeModel {
    // `modelId` as the upstream names it: claude-opus-4-7, claude-3-7-sonnet-20250219,
    // anthropic/claude-sonnet-4.5, us.anthropic.claude-opus-4-6-v1, claude-fable-5-1.
    static ClaudeModel of(const QString &modelId);

    QString family; // opus, sonnet, haiku, fable, mythos; empty when none is named
    int major = 0;  // 0: no version read
    int minor = 0;

    bool known() const { return major > 0 || family == QLatin1String("mythos"); }
    bool takesAdaptiveThinking() const;
    bool takesEffort() const;
    bool refusesManualThinking() const;
    bool refusesDisabledThinking() const;
    bool refusesSampling() const { return refusesManualThinking(); }
    bool refusesForcedToolUse() const;
    bool takesSystemMessages() const; // `system` messages between the turns

private:
    bool atLeast(int maj, int min) const { return major > maj || (major == maj && minor >= min); }
};

// The effort an adaptive-thinking Claude is asked for in place of a thinking budget: the
// client's own effort where it named one, else the level whose budget
// (model::thinkingBudgetForEffort) the client's budget reaches.
QString claudeEffortFor(const QString &effort, int budget);

} // namespace sw::upstream
