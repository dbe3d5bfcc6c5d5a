#pragma once
// What follows a failed try, decided in one place (docs/failover.md, "checks causes in order"):
// the loop gathers the facts, AttemptLoop::attemptFailed carries the decision out. Pure: no clock,
// no runner, no marks, so every order of the rules is a unit test (tests/unit/test_failure_decision.cpp).

#include "core/failover/failure_classifier.h"
#include "core/model/gateway_error.h"

#include <QString>
#include <optional>

namespace sw::failover {

// A failure the runner saw. `fromHeaders`: an HTTP error answer (the credential pools read its headers);
// `stop`: not the classifier's to judge (a body over our own limit): straight to the client.
struct TryFailure {
    FailureInput input;
    bool fromHeaders = false;
    bool stop = false;
    bool noRetry = false; // the same candidate would answer the same (its answer's shape): fail over, never retry
    bool callersCredential = false;                   // the try used the caller's own key (a passthrough credential)
    std::optional<model::GatewayError> upstreamError; // code/param/type the API gave, for the client's error
};

// What the attempt already mended, and what it sent: each mend is made once per attempt.
struct MendState {
    bool withoutReplayedReasoning = false;
    bool withReasoningBack = false;
    bool withoutReasoningSummary = false;
    bool withNineCharToolIds = false;
    bool withoutStreaming = false;
    std::optional<int> outputCap;     // the cap a mend already lowered the request to
    std::optional<int> outputCapSent; // the cap the try asked for (the client's, or the model's when lower)
};

struct FailureDecision {
    enum class Action {
        Stop,     // not the classifier's to fail over: the client gets the upstream's own error
        Mend,     // the same candidate once more, the request changed (no mark, no counter)
        FailOver, // a failover failure: another key, a provider retry, or the next candidate
    };
    enum class Mend {
        None,
        WithoutReplayedReasoning,
        WithReasoningBack,
        WithoutReasoningSummary,
        WithNineCharToolIds,
        WithoutStreaming,
        OutputCap
    };

    Action action = Action::Stop;
    Mend mend = Mend::None;
    std::optional<int> outputCap; // Mend::OutputCap: what to ask for
    QString mendWhy;              // the log line's words for a mend
    UpstreamFailure failure;      // FailOver: the classified failure
    bool mayRotate = false;       // FailOver: the pool's next key may serve (its usage limit, a model out of its reach)
    bool mayRetry = false;        // FailOver: a provider retry is allowed (RetryPolicy decides whether and when)
    QString cause;                // FailOver: the log outcome when not the usual one ("budget")

    // `budgetTimedOut`: the attempt budget ran out, so the try was cut by the gateway: a
    // server_error whatever the text says, never mended, never retried in the attempt.
    static FailureDecision decide(const TryFailure &failure, bool budgetTimedOut, const MendState &mended);
};

} // namespace sw::failover
