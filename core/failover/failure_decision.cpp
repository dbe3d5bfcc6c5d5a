#include "core/failover/failure_decision.h"

namespace sw::failover {

namespace {
FailureDecision mendWith(FailureDecision::Mend what, const QString &why, std::optional<int> cap = std::nullopt) {
    FailureDecision d;
    d.action = FailureDecision::Action::Mend;
    d.mend = what;
    d.mendWhy = why;
    d.outputCap = cap;
    return d;
}
} // namespace

FailureDecision FailureDecision::decide(const TryFailure &failure, bool budgetTimedOut, const MendState &mended) {
    const FailureInput &in = failure.input;
    // 1. Refusals of the request as this candidate got it, each mended once. A cut of the
    //    gateway's own (its budget, a limit of its own) is no refusal.
    if (!failure.stop && !budgetTimedOut) {
        // A signature in the history refused (another provider of the same API made it, on a turn
        // answered after a failover): the history without signed reasoning, as it would go to
        // another API.
        if (!mended.withoutReplayedReasoning && FailureClassifier::refusesReplayedReasoning(in))
            return mendWith(Mend::WithoutReplayedReasoning, QStringLiteral("replayed reasoning refused"));
        // A Chat server in DeepSeek's thinking mode refused the history because an assistant turn
        // with tool calls went without its reasoning_content (Chat clients' servers mostly refuse
        // the field, so it goes only where asked): with it.
        if (!mended.withReasoningBack && FailureClassifier::asksForReasoningBack(in))
            return mendWith(Mend::WithReasoningBack, QStringLiteral("reasoning asked back"));
        // OpenAI refused the reasoning summary (an organisation not verified): the same request
        // without it. The answer is the same kind; only the summary of its reasoning is missing.
        if (!mended.withoutReasoningSummary && FailureClassifier::refusesReasoningSummary(in))
            return mendWith(Mend::WithoutReasoningSummary, QStringLiteral("reasoning summary refused"));
        // A server with Mistral's template refused a tool call id that is not nine characters of
        // [a-zA-Z0-9] (a Claude history's toolu_…, OpenAI's call_…): every id by such an alias.
        if (!mended.withNineCharToolIds && FailureClassifier::refusesToolCallIds(in))
            return mendWith(Mend::WithNineCharToolIds, QStringLiteral("tool call ids refused"));
        // OpenAI will not stream this model to this organisation (not verified), and every upstream
        // request streams: the same request, asked for its answer whole (probe V1 F4). A second
        // refusal is not_served (the classifier's row): the next candidate.
        if (!mended.withoutStreaming && FailureClassifier::refusesToStream(in))
            return mendWith(Mend::WithoutStreaming, QStringLiteral("streaming refused"));
        // The output cap refused by a model that takes fewer (a fallback with a smaller cap than
        // the client's first choice), its maximum named, and less than the try asked for.
        if (const std::optional<int> most = FailureClassifier::outputMaximum(in);
            most && !mended.outputCap && (!mended.outputCapSent || *most < *mended.outputCapSent))
            return mendWith(Mend::OutputCap, QStringLiteral("output cap lowered"), most);
    }

    // 2. Classified by the table; nothing classified stops.
    FailureDecision d;
    if (budgetTimedOut) {
        d.failure.kind = FailureKind::ServerError; // the budget's cut, whatever the text says
        d.failure.message = in.message;
        d.cause = QStringLiteral("budget");
    } else if (const auto classified = failure.stop ? std::nullopt : FailureClassifier::classify(in)) {
        d.failure = *classified;
    } else {
        return d; // Stop
    }
    // 3. The caller's own key refused (a passthrough credential, 401 or 403): renewing it is the
    //    caller's to do (Claude Code refreshes its login on a 401), so the client gets the
    //    upstream's answer. A failover would hide it on every later request too; a mark would park
    //    the provider for a key that is not the provider's. A usage limit on that key fails over.
    if (failure.callersCredential && FailureClassifier::refusesTheKey(in))
        return FailureDecision{}; // Stop
    d.action = Action::FailOver;
    // 4. refreshGatewayApiKeyAfterAuthError: the pool's next key within the attempt (also past a
    //    key that cannot reach this model: another project's key may).
    //    A quota of one model used up (Gemini's, per project): another project's key has its own.
    d.mayRotate = d.failure.kind == FailureKind::CredentialExhausted || in.modelOutOfReach ||
                  (d.failure.kind == FailureKind::RateLimited && in.quotaOfOneModel);
    // 5. A provider retry, unless the gateway cut the try or its answer's shape would come again.
    d.mayRetry = !budgetTimedOut && !failure.noRetry;
    return d;
}

} // namespace sw::failover
